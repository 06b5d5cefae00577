-- One consistent view of a task.
-- KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
-- KEYS[6] runs hash
-- ARGV[1] id.  Returns {} | {state, runAt, json, attempts, last error or false}
local id = ARGV[1]
local json = redis.call('HGET', KEYS[3], id)
if not json then return {} end
local err = redis.call('HGET', KEYS[5], id)
local attempts, _, last = string.match(redis.call('HGET', KEYS[6], id) or '0:0:0', '^(%d+):(%d+):(%d+)$')
local due = redis.call('ZSCORE', KEYS[1], id)
if due then return {'scheduled', tonumber(due), json, tonumber(attempts), err} end
if redis.call('ZSCORE', KEYS[2], id) then return {'active', tonumber(last), json, tonumber(attempts), err} end
return {'dead', tonumber(last), json, tonumber(attempts), err}
