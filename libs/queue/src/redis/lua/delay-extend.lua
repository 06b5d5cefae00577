-- Extends the lease of a running delivery (heartbeat), only while its fencing token is current.
-- KEYS[1] active zset  KEYS[2] data hash
-- ARGV[1] id  ARGV[2] token  ARGV[3] lease ms.  Returns 1 when extended, 0 when the lease was lost.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local data = redis.call('HGET', KEYS[2], ARGV[1])
if not data or string.match(data, '^%d+:(%d+):') ~= ARGV[2] then return 0 end
return redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[3]), ARGV[1])
