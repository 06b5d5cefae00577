-- Counters of one shard; O(log N) in the number of tasks (the earliest, and a count of those due).
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] dead zset  KEYS[4] stats hash  KEYS[5] runs hash
-- Output: {scheduled, active, dead, next due or -1, scheduledTotal, fired, completed, retried, deadTotal, due now, now,
--   deliveries given back at shutdown, when the earliest task was due or -1 (before its time in the due set when a
--   lease of it ran out: see delay-claim)}
local dueKey, activeKey, deadKey, statsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
--- @include "now"
local now = serverNow()
local nextDue = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
local out = {redis.call('ZCARD', dueKey), redis.call('ZCARD', activeKey), redis.call('ZCARD', deadKey), -1}
if #nextDue > 0 then out[4] = tonumber(nextDue[2]) end
local s = redis.call('HMGET', statsKey, 'scheduled', 'fired', 'completed', 'retried', 'dead', 'givenBack')
for i = 1, #s - 1 do out[#out + 1] = tonumber(s[i] or '0') end
out[#out + 1] = redis.call('ZCOUNT', dueKey, '-inf', now)
out[#out + 1] = now
out[#out + 1] = tonumber(s[#s] or '0')
out[#out + 1] = out[4]
if #nextDue > 0 then
  local carried = string.match(redis.call('HGET', runsKey, nextDue[1]) or '', '^%d+:[^:]+:%d+:(%d+)$')
  if carried then out[#out] = tonumber(carried) end
end
return out
