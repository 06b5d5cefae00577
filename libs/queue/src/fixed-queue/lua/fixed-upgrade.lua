-- Moves a shard written by an earlier version (lists that carry a TTL, a `lens` hash naming each
-- group with its length) to this one (no TTL on lists, the last-push index) a page per call, like
-- fixed-obliterate: each call converts the lists the previous one named and names the next page.
-- A converted group counts as pushed to now, so ttlMs runs from the upgrade; a list whose TTL ran out
-- before it was converted had its messages expired, as the earlier version would have counted them.
-- Input:
--   KEYS[1] lens hash  KEYS[2] last-push zset  KEYS[3] stats hash  KEYS[3+i] list of group i
--   ARGV[1] most groups to name, then from ARGV[2] the group of each list, in the order of KEYS
-- Output: {group...}: the next page; empty once the lens hash is gone.
local lensKey, lastPushKey, statsKey = KEYS[1], KEYS[2], KEYS[3]
--- @include "now"
local now = serverNow()
--- @include "discard"
local lost = 0
for k = 4, #KEYS do
  local group = ARGV[k - 2]
  redis.call('PERSIST', KEYS[k])
  if redis.call('LLEN', KEYS[k]) > 0 then
    redis.call('ZADD', lastPushKey, 'NX', now, group)
  else
    lost = lost + tonumber(redis.call('HGET', lensKey, group) or '0')
  end
  redis.call('HDEL', lensKey, group)
end
discard(statsKey, 'expired', lost)
return redis.call('HRANDFIELD', lensKey, tonumber(ARGV[1]))
