-- Deletes a task in whatever state it is.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
-- KEYS[6] runs hash
-- ARGV[1] id.  Returns 1 when it existed.
local id = ARGV[1]
if redis.call('HDEL', KEYS[3], id) == 0 then return 0 end
redis.call('ZREM', KEYS[1], id)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[4], id)
redis.call('HDEL', KEYS[5], id)
redis.call('HDEL', KEYS[6], id)
return 1
