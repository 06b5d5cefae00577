-- Extends the leases of running deliveries (heartbeat), each only while its fencing token is current.
-- Input:
--   KEYS[1] active zset  KEYS[2] runs hash
--   ARGV[1] lease ms, then per delivery: id, token
-- Output: per delivery 1 when extended, 0 when lost.
local activeKey, runsKey = KEYS[1], KEYS[2]
--- @include "now"
local now = serverNow()
--- @include "rescore"
local leaseEnd = now + tonumber(ARGV[1])
local out = {}
for a = 2, #ARGV, 2 do
  local run = redis.call('HGET', runsKey, ARGV[a])
  if run and string.match(run, '^%d+:([^:]+):') == ARGV[a + 1] and redis.call('ZSCORE', activeKey, ARGV[a]) then
    rescore(activeKey, leaseEnd, ARGV[a])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
