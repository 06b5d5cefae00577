-- Gives a running delivery back (shutdown): due again at once, and the attempt not counted.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] runs hash
-- ARGV[1] id  ARGV[2] token.  Returns 1 when released.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local run = redis.call('HGET', KEYS[3], id)
if not run then return 0 end
local attempts, token, runAt = string.match(run, '^(%d+):(%d+):(%d+)$')
if token ~= ARGV[2] or redis.call('ZREM', KEYS[2], id) == 0 then return 0 end
attempts = tonumber(attempts) - 1
-- A task never delivered has no runs entry: one released from its first delivery is back to that.
if attempts == 0 then
  redis.call('HDEL', KEYS[3], id)
else
  redis.call('HSET', KEYS[3], id, attempts .. ':' .. token .. ':' .. runAt)
end
redis.call('ZADD', KEYS[1], now, id)
return 1
