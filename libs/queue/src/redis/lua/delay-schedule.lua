-- Schedules (or replaces) a task by id.
-- KEYS[1] due zset (id -> run at)  KEYS[2] active zset (id -> lease end)  KEYS[3] data hash
-- KEYS[4] dead zset  KEYS[5] stats hash  KEYS[6] errors hash
-- ARGV[1] id  ARGV[2] payload json  ARGV[3] 'at' | 'in'  ARGV[4] ms  ARGV[5] replace '1' | '0'
-- Task data is '<attempts>:<fencing token>:<run at of the current delivery>:<json>'.
-- Returns {created 1 | kept 0, runAt, now, is the shard's earliest task 1 | 0, state of a kept task}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local runAt = tonumber(ARGV[4])
if ARGV[3] == 'in' then runAt = now + runAt end

if redis.call('HEXISTS', KEYS[3], id) == 1 then
  if ARGV[5] == '0' then
    local due = redis.call('ZSCORE', KEYS[1], id)
    if due then return {0, tonumber(due), now, 0, 'scheduled'} end
    local data = redis.call('HGET', KEYS[3], id)
    local _, _, last = string.match(data, '^(%d+):(%d+):(%d+):')
    local state = 'dead'
    if redis.call('ZSCORE', KEYS[2], id) then state = 'active' end
    return {0, tonumber(last), now, 0, state}
  end
  -- Replacing a running task detaches it: its token no longer matches, so its ack cannot delete this one.
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('HDEL', KEYS[6], id)
end
redis.call('ZADD', KEYS[1], runAt, id)
redis.call('HSET', KEYS[3], id, '0:0:0:' .. ARGV[2])
redis.call('HINCRBY', KEYS[5], 'scheduled', 1)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
local isHead = 0
if head[1] == id then isHead = 1 end
return {1, runAt, now, isHead}
