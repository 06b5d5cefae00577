--- @include "sliced"
-- Forgets the oldest dead letters beyond `capacity`, with everything kept about them.
local function trimDeadLetters(deadKey, capacity, dataKey, errorsKey, runsKey)
  local over = redis.call('ZCARD', deadKey) - capacity
  if over <= 0 then return end
  local oldest = redis.call('ZPOPMIN', deadKey, over)
  local ids = {}
  for i = 1, #oldest, 2 do ids[#ids + 1] = oldest[i] end
  sliced('HDEL', dataKey, ids)
  sliced('HDEL', errorsKey, ids)
  sliced('HDEL', runsKey, ids)
end
