-- One consistent view of a task.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] successors hash
--   ARGV[1] id
-- Output: {} | {state, runAt, json, attempts, last error or false}
local dueKey, activeKey, dataKey, errorsKey, runsKey, successorsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7]
local id = ARGV[1]
local json = redis.call('HGET', dataKey, id)
if not json then return {} end
local err = redis.call('HGET', errorsKey, id)
local attempts, _, last = string.match(redis.call('HGET', runsKey, id) or '0:0:0', '^(%d+):([^:]+):(%d+)')
local due = redis.call('ZSCORE', dueKey, id)
if due then return {'scheduled', tonumber(due), json, tonumber(attempts), err} end
if redis.call('ZSCORE', activeKey, id) then
  -- Scheduled again while it runs: the payload is the new version's, and so is the time.
  local successor = redis.call('HGET', successorsKey, id)
  if successor then last = successor end
  return {'active', tonumber(last), json, tonumber(attempts), err}
end
return {'dead', tonumber(last), json, tonumber(attempts), err}
