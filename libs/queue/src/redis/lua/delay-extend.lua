-- Extends the leases of running deliveries (heartbeat), each only while its fencing token is current.
-- KEYS[1] active zset  KEYS[2] runs hash
-- ARGV[1] lease ms, then per delivery: id, token.  Returns per delivery 1 when extended, 0 when lost.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leaseEnd = now + tonumber(ARGV[1])
local out = {}
for a = 2, #ARGV, 2 do
  local run = redis.call('HGET', KEYS[2], ARGV[a])
  if run and string.match(run, '^%d+:(%d+):') == ARGV[a + 1] and redis.call('ZSCORE', KEYS[1], ARGV[a]) then
    redis.call('ZADD', KEYS[1], leaseEnd, ARGV[a])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
