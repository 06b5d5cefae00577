--- @include "sliced"
-- Forgets the oldest dead letters beyond `capacity`, with everything kept about them. At most
-- DEAD_TRIM_STEP per script call, whatever the number of calls to this helper in it: a capacity
-- lowered by thousands is caught up over later burials instead of blocking Redis in one long script.
local DEAD_TRIM_STEP = 500
local deadTrimLeft = DEAD_TRIM_STEP
local function trimDeadLetters(deadKey, capacity, dataKey, errorsKey, runsKey)
  local over = math.min(redis.call('ZCARD', deadKey) - capacity, deadTrimLeft)
  if over <= 0 then return end
  deadTrimLeft = deadTrimLeft - over
  local oldest = redis.call('ZPOPMIN', deadKey, over)
  local ids = {}
  for i = 1, #oldest, 2 do ids[#ids + 1] = oldest[i] end
  sliced('HDEL', dataKey, ids)
  sliced('HDEL', errorsKey, ids)
  sliced('HDEL', runsKey, ids)
end
