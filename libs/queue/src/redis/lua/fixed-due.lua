-- Lists groups of one shard that are due now, and when the next one will be.
-- KEYS[1] ready zset   ARGV[1] most groups to list
-- Returns {now, next due time or -1, group...}; next is `now` when more groups are due than listed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local groups = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local nextDue = -1
if #groups >= limit then
  nextDue = now
else
  local later = redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  if #later > 0 then nextDue = tonumber(later[2]) end
end
local out = {now, nextDue}
for i = 1, #groups do out[i + 2] = groups[i] end
return out
