-- Brings a dead-lettered task back, with its attempts reset.
-- Input:
--   KEYS[1] due zset  KEYS[2] dead zset  KEYS[3] errors hash  KEYS[4] runs hash
--   KEYS[5] passes hash (see pass-stamp)
--   ARGV[1] id  ARGV[2] 'at' | 'in'  ARGV[3] ms
-- Output: {1, runAt, now, is the shard's earliest task} | {0} when it is not dead
local dueKey, deadKey, errorsKey, runsKey, passesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
--- @include "now"
--- @include "pass-stamp"
local now = serverNow()
local id = ARGV[1]
if redis.call('ZREM', deadKey, id) == 0 then return {0} end
local runAt = tonumber(ARGV[3])
if ARGV[2] == 'in' then runAt = math.max(0, now + runAt) end
redis.call('HDEL', errorsKey, id)
redis.call('HDEL', runsKey, id)
redis.call('ZADD', dueKey, runAt, id)
stampWrite(passesKey, id)
local head = redis.call('ZRANGE', dueKey, 0, 0)
local isHead = 0
if head[1] == id then isHead = 1 end
return {1, runAt, now, isHead}
