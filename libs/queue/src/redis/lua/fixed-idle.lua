-- Lists groups whose last-push entry is older than ttlMs, oldest first: the candidates of fixed-expire,
-- which declares their lists and checks each again.
-- Input: KEYS[1] last-push zset  ARGV[1] ttlMs  ARGV[2] most groups to list
-- Output: {group...}
--- @include "now"
local now = serverNow()
return redis.call('ZRANGE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
