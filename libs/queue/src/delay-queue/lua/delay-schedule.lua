-- Schedules tasks by id, in the order given; each says what to do when a task of its id exists.
-- Input:
--   KEYS[1] due zset (id -> run at)  KEYS[2] active zset (id -> lease end)
--   KEYS[3] data hash (id -> payload, a debounced one's with its window: see debounce-window)
--   KEYS[4] dead zset  KEYS[5] stats hash  KEYS[6] errors hash
--   KEYS[7] runs hash (id -> '<attempts>:<fencing token>:<run at of the latest delivery>[:<due at>]', once delivered)
--   KEYS[8] successors hash (see the successor include)  KEYS[9] passes hash (see pass-stamp)
--   ARGV[1] the id of the pass of the task source writing these tasks, or '' for any other write
--   ARGV[2...] per task: id, payload json, 'at' | 'in', ms, when the id exists 'replace' | 'keep' | 'earlier' | 'later',
--           debounce's max wait ms or '' (a debounced schedule replaces)
--   Then, for a call whose tasks carry call keys, the call-keys section (KEYS[10...], the ARGV after the tasks).
-- Output: {now, earliest run time of the shard, then per task: written 1 | kept 0, runAt, state of a kept task or ''
--   | 2, 0, '' for a task of the pass written since it began, which the pass leaves to the next one
--   | 3, 0, '' for a late try of its call, which wrote nothing (see the call-keys include)}
--   A pass whose entry in the passes hash expired is refused (an error), having written nothing.
local dueKey, activeKey, dataKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local errorsKey, runsKey, successorsKey, passesKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
--- @include "now"
--- @include "debounce-window"
--- @include "call-keys"
--- @include "pass-stamp"
local began
if ARGV[1] ~= '' then
  began = redis.call('HGET', passesKey, 'p:' .. ARGV[1])
  if not began then return redis.error_reply('ERR the pass of the task source outlived its lease') end
  began = tonumber(began)
end
local now = serverNow()
local out = {now, 0}
local written = 0
local calls, deadlines, window, keyed, section = {}, {}, nil, 0, 0
if #KEYS > 9 then calls, deadlines, window, keyed, section = callKeys() end
for a = 2, #ARGV - section, 6 do
  local id, json, onExists, maxWait = ARGV[a], ARGV[a + 1], ARGV[a + 4], ARGV[a + 5]
  local runAt = tonumber(ARGV[a + 3])
  -- A delay far in the past is due now like a runAt before 1970: from 0, not a negative time.
  if ARGV[a + 2] == 'in' then runAt = math.max(0, now + runAt) end
  local exists = redis.call('HEXISTS', dataKey, id) == 1
  local write = true
  local position = (a + 4) / 6
  local callRecord = calls[position]
  local first = firstAnswer(callRecord)
  if first then
    write = false
    out[#out + 1] = 1
    out[#out + 1] = tonumber(first)
    out[#out + 1] = ''
  elseif callRecord and isLate(deadlines[position], now) then
    write = false
    out[#out + 1] = 3
    out[#out + 1] = 0
    out[#out + 1] = ''
  elseif began and writtenSince(passesKey, id, began) then
    write = false
    out[#out + 1] = 2
    out[#out + 1] = 0
    out[#out + 1] = ''
  elseif exists and onExists ~= 'replace' then
    -- The existing task's time as get() reports it: its due time, else that of its latest delivery.
    local current, state = redis.call('ZSCORE', dueKey, id), 'scheduled'
    if current then
      current = tonumber(current)
    else
      -- Running with a successor waiting: the successor's time is the task's.
      current = tonumber(
        redis.call('HGET', successorsKey, id)
          or string.match(redis.call('HGET', runsKey, id) or '0:0:0', '^%d+:[^:]+:(%d+)')
      )
      state = 'dead'
      if redis.call('ZSCORE', activeKey, id) then state = 'active' end
    end
    write = (onExists == 'earlier' and runAt < current) or (onExists == 'later' and runAt > current)
    if not write then
      out[#out + 1] = 0
      out[#out + 1] = current
      out[#out + 1] = state
    end
  end
  if write then
    if maxWait ~= '' then
      -- A window stays open until the task's first claim (or its cancel, or a schedule that is not
      -- debounced): a schedule that finds none opens one.
      local opened = now
      if exists then opened = debounceWindow(redis.call('HGET', dataKey, id)) or now end
      runAt = math.min(runAt, opened + tonumber(maxWait))
      json = '1,' .. opened .. ',' .. json
    end
    -- ZADD / HSET first: a full Redis refuses a schedule, a replacing one too, before anything is
    -- written (a script whose first write cannot grow memory would be let through).
    if exists and redis.call('ZSCORE', activeKey, id) then
      -- Replacing a running task: the new version waits as its successor until that delivery settles
      -- (never two runs of one id at once); the delivery keeps its token, and its outcome counts.
      redis.call('HSET', successorsKey, id, runAt)
    else
      redis.call('ZADD', dueKey, runAt, id)
      if exists then
        -- The new task starts with no attempts.
        redis.call('ZREM', deadKey, id)
        redis.call('HDEL', errorsKey, id)
        redis.call('HDEL', runsKey, id)
      end
    end
    redis.call('HSET', dataKey, id, json)
    if callRecord then remember(callRecord, runAt, window, deadlines[position], now) end
    -- A pass' own writes are not stamped: a restore of a million tasks would hold a million stamps.
    if not began then stampWrite(passesKey, id) end
    written = written + 1
    out[#out + 1] = 1
    out[#out + 1] = runAt
    out[#out + 1] = ''
  end
end
if written > 0 then redis.call('HINCRBY', statsKey, 'scheduled', written) end
local head = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
if #head > 0 then out[2] = tonumber(head[2]) else out[2] = -1 end
return out
