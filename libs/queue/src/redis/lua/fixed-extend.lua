-- Extends the leases of running deliveries (heartbeat), each only while its token holds the group;
-- at-least-once lists are kept from expiring (ttlMs) while their messages are being handled.
-- Input:
--   KEYS[1] held hash  KEYS[2] leases zset  KEYS[2+i] list of delivery i's group
--   ARGV[1] lease ms  ARGV[2] ttlMs, then per delivery: group, token
-- Output: per delivery 1 when extended, 0 when lost
local heldKey, leasesKey = KEYS[1], KEYS[2]
--- @include "now"
--- @include "held"
local leaseEnd, ttl = now + tonumber(ARGV[1]), ARGV[2]
local out = {}
for k = 3, #KEYS do
  local group = ARGV[2 * k - 3]
  if holds(heldKey, group, ARGV[2 * k - 2]) and redis.call('ZSCORE', leasesKey, group) then
    redis.call('ZADD', leasesKey, leaseEnd, group)
    redis.call('PEXPIRE', KEYS[k], ttl)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
