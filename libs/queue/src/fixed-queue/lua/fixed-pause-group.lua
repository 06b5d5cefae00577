-- Pauses a group (FixedQueue.pauseGroup): it leaves the ready index, so no claim of any process meets
-- it, and is recorded in the paused-groups hash (see the paused-groups include). Pushes still land, within
-- capacity; a batch of it already out finishes, and its acknowledgement leaves it out of the index.
-- Input:
--   KEYS[1] ready zset  KEYS[2] paused-groups hash
--   ARGV[1] group
-- Output: 1 when this call paused it, 0 when it already was
local readyKey, pausedKey = KEYS[1], KEYS[2]
--- @include "now"
local group = ARGV[1]
if redis.call('HEXISTS', pausedKey, group) == 1 then return 0 end
-- The ready entry goes first: a full Redis (maxmemory, noeviction) lets a script through only once
-- its first write frees memory, and an operator must be able to hold a group back there too.
redis.call('ZREM', readyKey, group)
redis.call('HSET', pausedKey, group, serverNow() .. ':manual')
return 1
