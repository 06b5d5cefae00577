-- Fails a delivery (same fencing as ack): schedules the retry after a backoff, or dead-letters the
-- task once it has had maxAttempts deliveries.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] stats hash
-- KEYS[6] errors hash  KEYS[7] runs hash
-- ARGV[1] id  ARGV[2] token  ARGV[3] maxAttempts  ARGV[4] retry delay ms  ARGV[5] dead-letter capacity
-- ARGV[6] error text
-- Returns {1, 'retry', runAt} | {1, 'dead', now} | {0}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local run = redis.call('HGET', KEYS[7], id)
if not run then return {0} end
local attempts, token = string.match(run, '^(%d+):(%d+):')
if token ~= ARGV[2] or not redis.call('ZSCORE', KEYS[2], id) then return {0} end
redis.call('ZREM', KEYS[2], id)
redis.call('HSET', KEYS[6], id, ARGV[6])
if tonumber(attempts) >= tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HINCRBY', KEYS[5], 'dead', 1)
  local over = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[5])
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', KEYS[4], over)
    for i = 1, #oldest, 2 do
      redis.call('HDEL', KEYS[3], oldest[i])
      redis.call('HDEL', KEYS[6], oldest[i])
      redis.call('HDEL', KEYS[7], oldest[i])
    end
  end
  return {1, 'dead', now}
end
local runAt = now + tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], runAt, id)
redis.call('HINCRBY', KEYS[5], 'retried', 1)
return {1, 'retry', runAt}
