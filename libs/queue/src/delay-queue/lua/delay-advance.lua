-- Ends an occurrence of a repeat and places the next one, in one step (same fencing as delay-ack): the
-- next tick is never placed twice nor lost, and never runs while this one still does. Which tick comes
-- next is decided by Redis' clock among ticks the client computed from the schedule (cron cannot be
-- evaluated here): the one after this occurrence when it is still ahead (or under missed 'all'), else
-- the latest missed one ('latest') or the first ahead ('skip'). A repeat removed meanwhile, or whose
-- schedule has no tick left, ends with its task.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] repeats hash  KEYS[8] successors hash (see successor)
--   ARGV[1] id  ARGV[2] token  ARGV[3] schedule text the ticks come from  ARGV[4] missed policy
--   ARGV[5] outcome: 'completed' | 'failed' | 'skipped' (not run: recorded as no run)
--   ARGV[6] error text of a failure  ARGV[7] tick after the occurrence (-1: none)
--   ARGV[8..] tick window (see tick-window)
-- Output: {'next', tick} | {'ended'} | {'fenced'} (the token is stale) | {'clock', now} (the window misses now)
--   | {'changed', schedule text} (the schedule changed since the claim: compute again from it)
local dueKey, activeKey, dataKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local errorsKey, runsKey, repeatsKey, successorsKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
--- @include "now"
--- @include "repeat-entry"
--- @include "tick-window"
local id, outcome = ARGV[1], ARGV[5]
local run = redis.call('HGET', runsKey, id)
if not run or string.match(run, '^%d+:([^:]+):') ~= ARGV[2] then return {'fenced'} end
local _, lastRunAt, lastOutcome, lastSuccessAt, schedule = readRepeat(redis.call('HGET', repeatsKey, id))
if schedule and schedule ~= ARGV[3] then return {'changed', schedule} end
local now = serverNow()
local nextTick
if schedule then
  local after = tonumber(ARGV[7])
  if after >= 0 and (after > now or ARGV[4] == 'all') then
    nextTick = after
  elseif after >= 0 then
    local covered, latest, ahead = pickTicks(now, ARGV, 8)
    if not covered then return {'clock', now} end
    if ARGV[4] == 'latest' and latest then nextTick = latest else nextTick = ahead end
  end
end
-- The lease goes first: a full Redis (maxmemory, noeviction) refuses a script whose first write may
-- grow memory, and the next occurrence must be placed there too (it takes what this one gives back).
redis.call('ZREM', activeKey, id)
-- A schedule of the repeat's id while this occurrence ran left its payload; the repeat's own schedule
-- places the next run, not the time that schedule gave.
redis.call('HDEL', successorsKey, id)
redis.call('HDEL', runsKey, id)
if outcome == 'completed' then redis.call('HINCRBY', statsKey, 'completed', 1) end
if outcome == 'failed' then redis.call('HSET', errorsKey, id, ARGV[6]) else redis.call('HDEL', errorsKey, id) end
if not nextTick then
  redis.call('ZREM', dueKey, id)
  redis.call('HDEL', dataKey, id)
  redis.call('HDEL', errorsKey, id)
  redis.call('HDEL', repeatsKey, id)
  return {'ended'}
end
if outcome ~= 'skipped' then
  lastRunAt, lastOutcome = now, outcome
end
if outcome == 'completed' then lastSuccessAt = now end
redis.call('ZADD', dueKey, nextTick, id)
redis.call('HINCRBY', statsKey, 'scheduled', 1)
writeRepeat(repeatsKey, id, nextTick, lastRunAt, lastOutcome, lastSuccessAt, schedule)
return {'next', nextTick}
