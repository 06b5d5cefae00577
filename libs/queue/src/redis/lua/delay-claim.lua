-- Claims up to `limit` due tasks of one shard: first returns tasks whose lease ran out to the due set
-- (or the dead-letter set when out of attempts), then moves due tasks to active with a lease and a
-- fresh fencing token. Claim and move are one step, so a task is never held by nobody.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] stats hash
-- KEYS[6] errors hash  KEYS[7] runs hash (id -> '<attempts>:<fencing token>:<run at>' of its latest delivery)
-- ARGV[1] limit  ARGV[2] lease ms  ARGV[3] maxAttempts  ARGV[4] dead-letter capacity
-- Returns {now, next due or lease end or -1, id, attempt, token, runAt, json, ...}
-- Redis' Lua unpacks a few thousand values at most: long argument lists go in slices of 1,000
-- (an even number, so that pairs stay together). Scripts cannot share code in Redis: fixed-push,
-- delay-claim and delay-ack each carry this helper.
local function sliced(command, key, list)
  local replies = {}
  for i = 1, #list, 1000 do
    local reply = redis.call(command, key, unpack(list, i, math.min(i + 999, #list)))
    if type(reply) == 'table' then for j = 1, #reply do replies[#replies + 1] = reply[j] end end
  end
  return replies
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local maxAttempts, deadCapacity = tonumber(ARGV[3]), tonumber(ARGV[4])

local function bury(id)
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HINCRBY', KEYS[5], 'dead', 1)
  local over = redis.call('ZCARD', KEYS[4]) - deadCapacity
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', KEYS[4], over)
    for i = 1, #oldest, 2 do
      redis.call('HDEL', KEYS[3], oldest[i])
      redis.call('HDEL', KEYS[6], oldest[i])
      redis.call('HDEL', KEYS[7], oldest[i])
    end
  end
end

-- Heads first: an idle shard (the common case when polled) costs two ZRANGEs.
local leaseHead = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #leaseHead > 0 and tonumber(leaseHead[2]) <= now then
  local stalled = redis.call('ZRANGE', KEYS[2], '-inf', now, 'BYSCORE', 'LIMIT', 0, 1000)
  for _, id in ipairs(stalled) do
    redis.call('ZREM', KEYS[2], id)
    local attempts = tonumber(string.match(redis.call('HGET', KEYS[7], id) or '0:', '^(%d+):'))
    if attempts >= maxAttempts then bury(id) else
      redis.call('ZADD', KEYS[1], now, id)
      redis.call('HINCRBY', KEYS[5], 'retried', 1)
    end
  end
  leaseHead = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
end
local dueHead = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')

local out = {now, -1}
local claimed = 0
if limit > 0 and #dueHead > 0 and tonumber(dueHead[2]) <= now then
  local due = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  -- One command for the whole batch at each step, not one per task: the calls from Lua into Redis
  -- cost more than the work they do (measured: most of a claim's time).
  local ids = {}
  for i = 1, #due, 2 do ids[#ids + 1] = due[i] end
  sliced('ZREM', KEYS[1], ids)
  local jsons = sliced('HMGET', KEYS[3], ids)
  -- Attempts and tokens live apart from the payload, so a claim never copies or rewrites the payload.
  local runs = sliced('HMGET', KEYS[7], ids)
  local started, leased = {}, {}
  -- One fencing token per claim call: each call delivers a task at most once, so it still tells deliveries apart.
  local token = redis.call('HINCRBY', KEYS[5], 'seq', 1)
  for i, id in ipairs(ids) do
    local json = jsons[i]
    if json then
      local runAt = due[2 * i]
      local attempt = 1
      if runs[i] then attempt = tonumber(string.match(runs[i], '^(%d+):')) + 1 end
      started[#started + 1] = id
      started[#started + 1] = attempt .. ':' .. token .. ':' .. runAt
      leased[#leased + 1] = now + lease
      leased[#leased + 1] = id
      out[#out + 1] = id
      out[#out + 1] = attempt
      out[#out + 1] = token
      out[#out + 1] = tonumber(runAt)
      out[#out + 1] = json
      claimed = claimed + 1
    end
  end
  if claimed > 0 then
    sliced('HSET', KEYS[7], started)
    sliced('ZADD', KEYS[2], leased)
    redis.call('HINCRBY', KEYS[5], 'fired', claimed)
  end
  if claimed < limit then dueHead = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES') end
  leaseHead = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
end

if limit > 0 and claimed >= limit then
  out[2] = now
else
  local n = -1
  if #dueHead > 0 then n = tonumber(dueHead[2]) end
  if #leaseHead > 0 and (n < 0 or tonumber(leaseHead[2]) < n) then n = tonumber(leaseHead[2]) end
  out[2] = n
end
return out
