-- Claims up to `limit` due tasks of one shard: first returns tasks whose lease ran out to the due set
-- (or the dead-letter set when out of attempts), then moves due tasks to active with a lease and a
-- fencing token. Claim and move are one step, so a task is never held by nobody. A due task already
-- past its last attempt (given back at shutdown with its handler past handlerTimeoutMs, its attempt
-- counted) is dead-lettered instead of delivered; a repeat's is delivered, and its worker gives the
-- occurrence up.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] stats hash
--   KEYS[6] errors hash  KEYS[7] runs hash (id -> '<attempts>:<fencing token>:<run at>[:<due at>]' of its
--           latest delivery; due at when it differs from run at: a delivery again after a lease ran out)
--   KEYS[8] repeats hash (see repeat-entry)  KEYS[9] successors hash (see successor)
--   ARGV[1] limit  ARGV[2] lease ms  ARGV[3] maxAttempts  ARGV[4] dead-letter capacity
--   ARGV[5] fencing token of this call's deliveries
-- Output (a paused queue: {now, -1}): {now, next due or lease end or -1, then per task: id, attempt, token, runAt,
--   json, repeat entry or '', dueAt}
local dueKey, activeKey, dataKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local errorsKey, runsKey, repeatsKey, successorsKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
--- @include "now"
local now = serverNow()
--- @include "sliced"
--- @include "trim-dead-letters"
--- @include "debounce-window"
--- @include "successor"
-- Dead letters forgotten per call beyond capacity.
local DEAD_TRIM_STEP = 500
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local maxAttempts, deadCapacity = tonumber(ARGV[3]), tonumber(ARGV[4])
-- The caller draws the token at random: a counter kept in Redis would start again after data loss
-- (FLUSHDB, a restart without persistence, a failover to a lagging replica) and hand out tokens of
-- deliveries still running. One per call: a call delivers a task at most once.
local token = ARGV[5]

-- Heads first: an idle shard (the common case when polled) costs two ZRANGEs, and not even the pause
-- flag: with nothing due and no lease run out, a paused shard would answer the same.
local leaseHead = redis.call('ZRANGE', activeKey, 0, 0, 'WITHSCORES')
local dueHead = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
local lapsed = #leaseHead > 0 and tonumber(leaseHead[2]) <= now
if not lapsed and (#dueHead == 0 or tonumber(dueHead[2]) > now) then
  local n = -1
  if #dueHead > 0 then n = tonumber(dueHead[2]) end
  if #leaseHead > 0 and (n < 0 or tonumber(leaseHead[2]) < n) then n = tonumber(leaseHead[2]) end
  return {now, n}
end

--- @include "paused"
-- Paused, tasks whose lease ran out stay active too: they are retried on the first claim after resume().
if isPaused(statsKey) then return {now, -1} end

if lapsed then
  local stalled = redis.call('ZRANGE', activeKey, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1000)
  local buried = 0
  for _, id in ipairs(stalled) do
    redis.call('ZREM', activeKey, id)
    local run = redis.call('HGET', runsKey, id) or '0:'
    local attempts = tonumber(string.match(run, '^(%d+):'))
    -- Scheduled again while it ran: the new version takes its place, due at its time.
    local replaced = promoteSuccessor(successorsKey, dueKey, runsKey, errorsKey, id)
    -- A repeat is never buried: its worker records the lost last attempt and places the next tick.
    if not replaced and attempts >= maxAttempts and redis.call('HEXISTS', repeatsKey, id) == 0 then
      redis.call('ZADD', deadKey, now, id)
      buried = buried + 1
    elseif not replaced then
      redis.call('ZADD', dueKey, now, id)
      redis.call('HINCRBY', statsKey, 'retried', 1)
      -- Due again now, but late since its own due time: the next delivery reports that one (dueAt).
      if string.match(run, '^%d+:[^:]+:%d+$') then
        redis.call('HSET', runsKey, id, run .. ':' .. string.match(run, '(%d+)$'))
      end
    end
  end
  if buried > 0 then
    redis.call('HINCRBY', statsKey, 'dead', buried)
    trimDeadLetters(deadKey, deadCapacity, { dataKey, errorsKey, runsKey }, DEAD_TRIM_STEP)
  end
  leaseHead = redis.call('ZRANGE', activeKey, 0, 0, 'WITHSCORES')
  dueHead = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
end

local out = {now, -1}
local claimed = 0
if limit > 0 and #dueHead > 0 and tonumber(dueHead[2]) <= now then
  local due = redis.call('ZRANGE', dueKey, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  -- One command for the whole batch at each step, not one per task: the calls from Lua into Redis
  -- cost more than the work they do (measured: most of a claim's time).
  local ids = {}
  for i = 1, #due, 2 do ids[#ids + 1] = due[i] end
  sliced('ZREM', dueKey, ids)
  local jsons = sliced('HMGET', dataKey, ids)
  -- Attempts and tokens live apart from the payload, so a claim never rewrites the payload, but for a
  -- debounced task's first: its window ends here.
  local runs = sliced('HMGET', runsKey, ids)
  local repeats = sliced('HMGET', repeatsKey, ids)
  local started, leased, unwindowed = {}, {}, {}
  local spent = 0
  for i, id in ipairs(ids) do
    local json = jsons[i]
    local attempt = 1
    if runs[i] then attempt = tonumber(string.match(runs[i], '^(%d+):')) + 1 end
    if json and attempt > maxAttempts and not repeats[i] then
      redis.call('ZADD', deadKey, now, id)
      spent = spent + 1
    elseif json then
      local opened, stored = debounceWindow(json)
      if opened then
        json = stored
        unwindowed[#unwindowed + 1] = id
        unwindowed[#unwindowed + 1] = stored
      end
      local runAt = due[2 * i]
      local dueAt = nil
      if runs[i] then dueAt = string.match(runs[i], '^%d+:[^:]+:%d+:(%d+)$') end
      started[#started + 1] = id
      if dueAt then
        started[#started + 1] = attempt .. ':' .. token .. ':' .. runAt .. ':' .. dueAt
      else
        started[#started + 1] = attempt .. ':' .. token .. ':' .. runAt
        dueAt = runAt
      end
      leased[#leased + 1] = now + lease
      leased[#leased + 1] = id
      out[#out + 1] = id
      out[#out + 1] = attempt
      out[#out + 1] = token
      out[#out + 1] = tonumber(runAt)
      out[#out + 1] = json
      out[#out + 1] = repeats[i] or ''
      out[#out + 1] = tonumber(dueAt)
      claimed = claimed + 1
    end
  end
  if claimed > 0 then
    if #unwindowed > 0 then sliced('HSET', dataKey, unwindowed) end
    sliced('HSET', runsKey, started)
    sliced('ZADD', activeKey, leased)
    redis.call('HINCRBY', statsKey, 'fired', claimed)
  end
  if spent > 0 then
    redis.call('HINCRBY', statsKey, 'dead', spent)
    trimDeadLetters(deadKey, deadCapacity, { dataKey, errorsKey, runsKey }, DEAD_TRIM_STEP)
  end
  -- Read after a full claim too: one that took the last due task says when work falls due next, so a
  -- consumer whose slots it filled (one slot: a @Recurring's) does not claim again for nothing.
  dueHead = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
  leaseHead = redis.call('ZRANGE', activeKey, 0, 0, 'WITHSCORES')
end

local n = -1
if #dueHead > 0 then n = tonumber(dueHead[2]) end
if #leaseHead > 0 and (n < 0 or tonumber(leaseHead[2]) < n) then n = tonumber(leaseHead[2]) end
out[2] = n
return out
