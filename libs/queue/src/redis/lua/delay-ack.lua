-- Completes deliveries, each only if its fencing token is still the task's: an ack from a worker
-- whose lease ran out and whose task was delivered again (or replaced) must not delete the newer one.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
-- KEYS[6] runs hash
-- ARGV: per delivery: id, token.  Returns per delivery 1 when completed, 0 when it was stale.
-- Redis' Lua unpacks a few thousand values at most: long argument lists go in slices of 1,000
-- (an even number, so that pairs stay together). Scripts cannot share code in Redis: fixed-push,
-- delay-claim and delay-ack each carry this helper.
local function sliced(command, key, list)
  local replies = {}
  for i = 1, #list, 1000 do
    local reply = redis.call(command, key, unpack(list, i, math.min(i + 999, #list)))
    if type(reply) == 'table' then for j = 1, #reply do replies[#replies + 1] = reply[j] end end
  end
  return replies
end
local ids = {}
for a = 1, #ARGV, 2 do ids[#ids + 1] = ARGV[a] end
-- Batch commands rather than one set per delivery: the calls from Lua into Redis cost more than
-- the work they do.
local runs = sliced('HMGET', KEYS[6], ids)
local out, done, retried, seen = {}, {}, {}, {}
for i, id in ipairs(ids) do
  local attempts, token
  if runs[i] then attempts, token = string.match(runs[i], '^(%d+):(%d+):') end
  if token == ARGV[2 * i] and not seen[id] then
    seen[id] = true
    done[#done + 1] = id
    -- Only a task that failed before has an error recorded.
    if tonumber(attempts) > 1 then retried[#retried + 1] = id end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #done > 0 then
  -- Token still ours: the task is active or, if its lease ran out, waits in due for a redelivery
  -- that has not happened yet; either way this delivery did the work.
  sliced('ZREM', KEYS[2], done)
  sliced('ZREM', KEYS[1], done)
  sliced('HDEL', KEYS[3], done)
  sliced('HDEL', KEYS[6], done)
  if #retried > 0 then sliced('HDEL', KEYS[5], retried) end
  redis.call('HINCRBY', KEYS[4], 'completed', #done)
end
return out
