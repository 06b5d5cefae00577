--- @include "now"
--- @include "repeat-entry"
--- @include "tick-window"
-- Declares a repeat (see delay-repeat.lua, whose body this is): `keys` are its eight keys, in its
-- order; the tick window is read from args[first..]. Returns its reply.
local function declareRepeat(keys, id, schedule, json, args, first)
  local dueKey, activeKey, dataKey, deadKey, statsKey = keys[1], keys[2], keys[3], keys[4], keys[5]
  local errorsKey, runsKey, repeatsKey = keys[6], keys[7], keys[8]
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
  local covered, _, nextTick = pickTicks(now, args, first)
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
end
