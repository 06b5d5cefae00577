-- Completes deliveries, each only if its fencing token is still the task's: an ack from a worker
-- whose lease ran out and whose task was delivered again (or replaced) must not delete the newer one.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
-- ARGV: per delivery: id, token.  Returns per delivery 1 when completed, 0 when it was stale.
local out = {}
local completed = 0
for a = 1, #ARGV, 2 do
  local id = ARGV[a]
  local data = redis.call('HGET', KEYS[3], id)
  local attempts, token
  if data then attempts, token = string.match(data, '^(%d+):(%d+):') end
  if token == ARGV[a + 1] then
    -- Token still ours: the task is active or, if its lease ran out, waits in due for a redelivery
    -- that has not happened yet; either way this delivery did the work.
    if redis.call('ZREM', KEYS[2], id) == 0 then redis.call('ZREM', KEYS[1], id) end
    redis.call('HDEL', KEYS[3], id)
    -- Only a task that failed before has an error recorded.
    if tonumber(attempts) > 1 then redis.call('HDEL', KEYS[5], id) end
    completed = completed + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if completed > 0 then redis.call('HINCRBY', KEYS[4], 'completed', completed) end
return out
