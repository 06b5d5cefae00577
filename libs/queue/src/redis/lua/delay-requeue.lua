-- Brings a dead-lettered task back, with its attempts reset.
-- KEYS[1] due zset  KEYS[2] dead zset  KEYS[3] errors hash  KEYS[4] runs hash
-- ARGV[1] id  ARGV[2] 'at' | 'in'  ARGV[3] ms
-- Returns {1, runAt, now, is the shard's earliest task} | {0}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
if redis.call('ZREM', KEYS[2], id) == 0 then return {0} end
local runAt = tonumber(ARGV[3])
if ARGV[2] == 'in' then runAt = now + runAt end
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
redis.call('ZADD', KEYS[1], runAt, id)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
local isHead = 0
if head[1] == id then isHead = 1 end
return {1, runAt, now, isHead}
