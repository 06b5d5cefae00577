-- Declares a repeat: its schedule and payload, and its pending occurrence. Every replica declares
-- the same repeats at start, so the same schedule changes nothing (but the payload); a new or changed
-- one places the occurrence at the first tick after now. A running occurrence is left to finish: the
-- changed schedule takes effect when it is acknowledged.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] stats hash
--   KEYS[6] errors hash  KEYS[7] runs hash  KEYS[8] repeats hash (id -> see repeat-entry)
--   ARGV[1] id  ARGV[2] schedule text  ARGV[3] payload json  ARGV[4..] tick window (see tick-window)
-- Output: {'created' | 'changed' | 'unchanged', pending occurrence} | {'clock', now} | {'ended', now}
local dueKey, activeKey, dataKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local errorsKey, runsKey, repeatsKey = KEYS[6], KEYS[7], KEYS[8]
--- @include "now"
--- @include "repeat-entry"
--- @include "tick-window"
local id, schedule, json = ARGV[1], ARGV[2], ARGV[3]
local occurrence, lastRunAt, lastOutcome, lastSuccessAt, stored = readRepeat(redis.call('HGET', repeatsKey, id))
local running = redis.call('ZSCORE', activeKey, id)
if stored == schedule and (running or redis.call('ZSCORE', dueKey, id)) then
  redis.call('HSET', dataKey, id, json)
  return {'unchanged', occurrence}
end
local status = 'created'
if stored and stored ~= schedule then status = 'changed' end
local now = serverNow()
if running then
  -- A plain task of that id running: its acknowledgement ends it, and the next tick is placed then.
  occurrence = occurrence or now
  redis.call('HSET', dataKey, id, json)
  writeRepeat(repeatsKey, id, occurrence, lastRunAt or '', lastOutcome or '', lastSuccessAt or '', schedule)
  return {status, occurrence}
end
local covered, _, nextTick = pickTicks(now, ARGV, 4)
if not covered then return {'clock', now} end
if not nextTick then return {'ended', now} end
-- A task of that id (an earlier occurrence, a dead one, or a plain task) becomes the occurrence.
if redis.call('HEXISTS', dataKey, id) == 0 then redis.call('HINCRBY', statsKey, 'scheduled', 1) end
redis.call('ZREM', deadKey, id)
redis.call('HDEL', errorsKey, id)
redis.call('HDEL', runsKey, id)
redis.call('ZADD', dueKey, nextTick, id)
redis.call('HSET', dataKey, id, json)
writeRepeat(repeatsKey, id, nextTick, lastRunAt or '', lastOutcome or '', lastSuccessAt or '', schedule)
return {status, nextTick}
