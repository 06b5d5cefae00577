-- One consistent view of a task.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
-- ARGV[1] id.  Returns {} | {state, runAt, data, last error or false}
local id = ARGV[1]
local data = redis.call('HGET', KEYS[3], id)
if not data then return {} end
local err = redis.call('HGET', KEYS[5], id)
local due = redis.call('ZSCORE', KEYS[1], id)
if due then return {'scheduled', tonumber(due), data, err} end
local _, _, last = string.match(data, '^(%d+):(%d+):(%d+):')
if redis.call('ZSCORE', KEYS[2], id) then return {'active', tonumber(last), data, err} end
return {'dead', tonumber(last), data, err}
