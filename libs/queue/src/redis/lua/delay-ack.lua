-- Completes a delivery, only if its fencing token is still the task's: an ack from a worker whose
-- lease ran out and whose task was delivered again (or replaced) must not delete the newer one.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
-- ARGV[1] id  ARGV[2] token.  Returns 1 when completed, 0 when the delivery was stale.
local id = ARGV[1]
local data = redis.call('HGET', KEYS[3], id)
if not data or string.match(data, '^%d+:(%d+):') ~= ARGV[2] then return 0 end
-- Token still ours: the task is active, or its lease ran out and it waits in due for a redelivery
-- that has not happened yet; either way this delivery did the work.
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[5], id)
redis.call('HINCRBY', KEYS[4], 'completed', 1)
return 1
