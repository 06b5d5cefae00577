-- Counters of one shard; O(log N) in the number of tasks (the earliest, and a count of those due).
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] dead zset  KEYS[4] stats hash
-- Returns {scheduled, active, dead, next due or -1, scheduledTotal, fired, completed, retried, deadTotal, due now, now}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nextDue = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local out = {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), -1}
if #nextDue > 0 then out[4] = tonumber(nextDue[2]) end
local s = redis.call('HMGET', KEYS[4], 'scheduled', 'fired', 'completed', 'retried', 'dead')
for i = 1, #s do out[#out + 1] = tonumber(s[i] or '0') end
out[#out + 1] = redis.call('ZCOUNT', KEYS[1], '-inf', now)
out[#out + 1] = now
return out
