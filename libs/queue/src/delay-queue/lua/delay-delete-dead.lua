-- Deletes one chunk of a shard's dead-lettered tasks that died at least ARGV[2] ms ago (the earliest
-- first), payload and all; the caller calls again until a chunk comes back short.
-- Input:
--   KEYS[1] dead zset  KEYS[2] data hash  KEYS[3] errors hash  KEYS[4] runs hash
--   ARGV[1] most tasks in this chunk  ARGV[2] age in ms
-- Output: tasks deleted
local deadKey, dataKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
local now = serverNow()
--- @include "sliced"
local ids = redis.call('ZRANGE', deadKey, '-inf', now - tonumber(ARGV[2]), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
if #ids == 0 then return 0 end
sliced('ZREM', deadKey, ids)
sliced('HDEL', dataKey, ids)
sliced('HDEL', errorsKey, ids)
sliced('HDEL', runsKey, ids)
return #ids
