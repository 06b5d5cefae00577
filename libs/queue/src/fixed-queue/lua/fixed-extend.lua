-- Extends the leases of running deliveries (heartbeat), each only while its token holds the group.
-- (A held group is never expired by ttlMs: fixed-expire leaves it until its batch is done.)
-- Input:
--   KEYS[1] held hash  KEYS[2] leases zset
--   ARGV[1] lease ms, then per delivery: group, token
-- Output: per delivery 1 when extended, 0 when lost
local heldKey, leasesKey = KEYS[1], KEYS[2]
--- @include "now"
local now = serverNow()
--- @include "held"
--- @include "extend-leases"
return extendLeases(leasesKey, now + tonumber(ARGV[1]), ARGV, function(group, token)
  return holds(heldKey, group, token)
end)
