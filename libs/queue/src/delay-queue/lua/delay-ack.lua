-- Completes deliveries, each only if its fencing token is still the task's: an ack from a worker
-- whose lease ran out and whose task was delivered again (or replaced) must not delete the newer one.
-- A task scheduled again while this delivery ran has its successor made due instead (see successor).
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] stats hash  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] successors hash  KEYS[8] passes hash (see pass-stamp)
--   ARGV    per delivery: id, token
-- Output: per delivery 1 when completed, 0 when it was stale; then per delivery the run time of the
--   successor it made due, or -1.
local dueKey, activeKey, dataKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local errorsKey, runsKey, successorsKey, passesKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
--- @include "sliced"
--- @include "successor"
--- @include "pass-stamp"
local ids = {}
for a = 1, #ARGV, 2 do ids[#ids + 1] = ARGV[a] end
-- Batch commands rather than one set per delivery: the calls from Lua into Redis cost more than
-- the work they do.
local runs = sliced('HMGET', runsKey, ids)
local successors = sliced('HMGET', successorsKey, ids)
local out, next, completed, done, retried, seen = {}, {}, {}, {}, {}, {}
for i, id in ipairs(ids) do
  local attempts, token
  if runs[i] then attempts, token = string.match(runs[i], '^(%d+):([^:]+):') end
  next[i] = -1
  if token == ARGV[2 * i] and not seen[id] then
    seen[id] = true
    completed[#completed + 1] = id
    stampWrite(passesKey, id)
    if successors[i] then
      next[i] = promoteSuccessor(successorsKey, dueKey, runsKey, errorsKey, id)
    else
      done[#done + 1] = id
      -- Only a task that failed before has an error recorded.
      if tonumber(attempts) > 1 then retried[#retried + 1] = id end
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #completed > 0 then
  sliced('ZREM', activeKey, completed)
  redis.call('HINCRBY', statsKey, 'completed', #completed)
end
if #done > 0 then
  -- Token still ours: the task is active or, if its lease ran out, waits in due for a redelivery
  -- that has not happened yet; either way this delivery did the work.
  sliced('ZREM', dueKey, done)
  sliced('HDEL', dataKey, done)
  sliced('HDEL', runsKey, done)
  if #retried > 0 then sliced('HDEL', errorsKey, retried) end
end
for i = 1, #next do out[#out + 1] = next[i] end
return out
