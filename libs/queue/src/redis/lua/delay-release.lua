-- Gives a running delivery back (shutdown): due again at once, and the attempt not counted.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash
-- ARGV[1] id  ARGV[2] token.  Returns 1 when released.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local data = redis.call('HGET', KEYS[3], id)
if not data then return 0 end
local attempts, token, runAt, json = string.match(data, '^(%d+):(%d+):(%d+):(.*)$')
if token ~= ARGV[2] or redis.call('ZREM', KEYS[2], id) == 0 then return 0 end
redis.call('HSET', KEYS[3], id, (tonumber(attempts) - 1) .. ':' .. token .. ':' .. runAt .. ':' .. json)
redis.call('ZADD', KEYS[1], now, id)
return 1
