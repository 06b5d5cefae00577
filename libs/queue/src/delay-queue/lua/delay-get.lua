-- One consistent view of a task.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
--   KEYS[6] runs hash
--   ARGV[1] id
-- Output: {} | {state, runAt, json, attempts, last error or false}
local dueKey, activeKey, dataKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6]
local id = ARGV[1]
local json = redis.call('HGET', dataKey, id)
if not json then return {} end
local err = redis.call('HGET', errorsKey, id)
local attempts, _, last = string.match(redis.call('HGET', runsKey, id) or '0:0:0', '^(%d+):([^:]+):(%d+)')
local due = redis.call('ZSCORE', dueKey, id)
if due then return {'scheduled', tonumber(due), json, tonumber(attempts), err} end
if redis.call('ZSCORE', activeKey, id) then return {'active', tonumber(last), json, tonumber(attempts), err} end
return {'dead', tonumber(last), json, tonumber(attempts), err}
