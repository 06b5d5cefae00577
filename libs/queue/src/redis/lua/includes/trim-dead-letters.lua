--- @include "sliced"
-- Forgets the oldest dead letters of `deadKey` (a zset of ids by death time) beyond `capacity`, at most
-- `most` of them, with what each hash of `hashes` keeps under their ids (`forget`, if given, is called
-- with the ids first). A bounded step: a capacity lowered by thousands is caught up over later burials
-- instead of blocking Redis in one long script. Returns how many went.
local function trimDeadLetters(deadKey, capacity, hashes, most, forget)
  local over = math.min(redis.call('ZCARD', deadKey) - capacity, most)
  if over <= 0 then return 0 end
  local oldest = redis.call('ZPOPMIN', deadKey, over)
  local ids = {}
  for i = 1, #oldest, 2 do ids[#ids + 1] = oldest[i] end
  if forget then forget(ids) end
  for _, hash in ipairs(hashes) do sliced('HDEL', hash, ids) end
  return #ids
end
