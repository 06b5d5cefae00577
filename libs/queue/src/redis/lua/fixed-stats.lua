-- Counters of one shard; O(1), whatever the number of groups (plus one ZRANGE for the earliest due).
-- KEYS[1] ready zset   KEYS[2] stats hash
-- Returns {groups, pending, pushed, dropped, expired, delivered, earliest due time or -1, now}
local t = redis.call('TIME')
local s = redis.call('HMGET', KEYS[2], 'pending', 'pushed', 'dropped', 'expired', 'delivered')
local out = {redis.call('ZCARD', KEYS[1])}
for i = 1, #s do out[i + 1] = tonumber(s[i] or '0') end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
out[#out + 1] = -1
if #head > 0 then out[#out] = tonumber(head[2]) end
out[#out + 1] = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return out
