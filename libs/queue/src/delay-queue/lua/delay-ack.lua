-- Completes deliveries, each only if its fencing token is still the task's: an ack from a worker
-- whose lease ran out and whose task was delivered again (or replaced) must not delete the newer one.
-- A delivery whose task was replaced (scheduled again under its id, often by its own handler) did its
-- work all the same: it counts as completed, and the new task is left alone.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
--   KEYS[6] runs hash
--   ARGV    per delivery: id, token
-- Output: per delivery 1 when completed, 2 when completed and its task replaced, 0 when it was stale.
local dueKey, activeKey, dataKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local errorsKey, runsKey = KEYS[5], KEYS[6]
--- @include "sliced"
local ids = {}
for a = 1, #ARGV, 2 do ids[#ids + 1] = ARGV[a] end
-- Batch commands rather than one set per delivery: the calls from Lua into Redis cost more than
-- the work they do.
local runs = sliced('HMGET', runsKey, ids)
local out, done, retried, seen = {}, {}, {}, {}
local replacedCount = 0
-- A replacement starts with no runs entry (see delay-schedule), so its task is there and either not
-- delivered yet or on its first delivery; a delivery again after a lost lease is at its second or later.
local function replaced(id, run)
  if run and string.match(run, '^(%d+):') ~= '1' then return false end
  return redis.call('HEXISTS', dataKey, id) == 1
end
for i, id in ipairs(ids) do
  local attempts, token
  if runs[i] then attempts, token = string.match(runs[i], '^(%d+):([^:]+):') end
  if token == ARGV[2 * i] and not seen[id] then
    seen[id] = true
    done[#done + 1] = id
    -- Only a task that failed before has an error recorded.
    if tonumber(attempts) > 1 then retried[#retried + 1] = id end
    out[#out + 1] = 1
  elseif not seen[id] and replaced(id, runs[i]) then
    seen[id] = true
    replacedCount = replacedCount + 1
    out[#out + 1] = 2
  else
    out[#out + 1] = 0
  end
end
if replacedCount > 0 then redis.call('HINCRBY', statsKey, 'completed', replacedCount) end
if #done > 0 then
  -- Token still ours: the task is active or, if its lease ran out, waits in due for a redelivery
  -- that has not happened yet; either way this delivery did the work.
  sliced('ZREM', activeKey, done)
  sliced('ZREM', dueKey, done)
  sliced('HDEL', dataKey, done)
  sliced('HDEL', runsKey, done)
  if #retried > 0 then sliced('HDEL', errorsKey, retried) end
  redis.call('HINCRBY', statsKey, 'completed', #done)
end
return out
