-- Brings back one chunk of a shard's dead-lettered tasks (the earliest deaths first), due now with their
-- attempts reset; the caller calls again until a chunk comes back short. A chunk per call keeps each
-- call short whatever the number of dead letters.
-- Input:
--   KEYS[1] due zset  KEYS[2] dead zset  KEYS[3] errors hash  KEYS[4] runs hash
--   ARGV[1] most tasks in this chunk
-- Output: {tasks requeued, now}
local dueKey, deadKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
local now = serverNow()
--- @include "sliced"
local ids = redis.call('ZRANGE', deadKey, 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then return {0, now} end
sliced('ZREM', deadKey, ids)
sliced('HDEL', errorsKey, ids)
sliced('HDEL', runsKey, ids)
local due = {}
for _, id in ipairs(ids) do
  due[#due + 1] = now
  due[#due + 1] = id
end
sliced('ZADD', dueKey, due)
return {#ids, now}
