-- Removes a repeat: its pending occurrence goes with it; a running one finishes, and its
-- acknowledgement (delay-advance) finds no repeat and places nothing.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] repeats hash
--   ARGV[1] id
-- Output: 1 when the repeat existed, else 0.
local dueKey, activeKey, dataKey, deadKey, errorsKey, runsKey, repeatsKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local id = ARGV[1]
if redis.call('HDEL', repeatsKey, id) == 0 then return 0 end
if not redis.call('ZSCORE', activeKey, id) then
  redis.call('ZREM', dueKey, id)
  redis.call('ZREM', deadKey, id)
  redis.call('HDEL', dataKey, id)
  redis.call('HDEL', errorsKey, id)
  redis.call('HDEL', runsKey, id)
end
return 1
