-- Extends the leases of running deliveries (heartbeat), each only while its fencing token is current.
-- Input:
--   KEYS[1] active zset  KEYS[2] runs hash
--   ARGV[1] lease ms, then per delivery: id, token
-- Output: per delivery 1 when extended, 0 when lost.
local activeKey, runsKey = KEYS[1], KEYS[2]
--- @include "now"
local now = serverNow()
--- @include "extend-leases"
return extendLeases(activeKey, now + tonumber(ARGV[1]), ARGV, function(id, token)
  local run = redis.call('HGET', runsKey, id)
  return run and string.match(run, '^%d+:([^:]+):') == token
end)
