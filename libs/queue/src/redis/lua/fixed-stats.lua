-- Counters of one shard; O(1), whatever the number of groups.
-- KEYS[1] ready zset   KEYS[2] stats hash
-- Returns {groups, pending, pushed, dropped, expired, delivered}
local s = redis.call('HMGET', KEYS[2], 'pending', 'pushed', 'dropped', 'expired', 'delivered')
local out = {redis.call('ZCARD', KEYS[1])}
for i = 1, #s do out[i + 1] = tonumber(s[i] or '0') end
return out
