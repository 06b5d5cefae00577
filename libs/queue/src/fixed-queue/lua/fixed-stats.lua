-- Counters of one shard; O(1), whatever the number of groups (plus one ZRANGE for the earliest due).
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] leases zset (groups whose batch is being handled)
--   KEYS[4] paused-groups hash
-- Output: {groups ready, pending, pushed, dropped, expired, delivered, dead, redelivered, requeued,
--   messages in dead batches now, groups being handled, paused groups, earliest due time or -1, now,
--   deliveries given back at shutdown}
local readyKey, statsKey, leasesKey, pausedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
local now = serverNow()
local s = redis.call('HMGET', statsKey, 'pending', 'pushed', 'dropped', 'expired', 'delivered', 'dead', 'redelivered', 'requeued', 'deadNow')
local out = {redis.call('ZCARD', readyKey)}
for i = 1, #s do out[i + 1] = tonumber(s[i] or '0') end
out[#out + 1] = redis.call('ZCARD', leasesKey)
out[#out + 1] = redis.call('HLEN', pausedKey)
local head = redis.call('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
out[#out + 1] = -1
if #head > 0 then out[#out] = tonumber(head[2]) end
out[#out + 1] = now
out[#out + 1] = tonumber(redis.call('HGET', statsKey, 'givenBack') or '0')
return out
