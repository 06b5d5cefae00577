-- Schedules (or replaces) tasks by id, in the order given.
-- KEYS[1] due zset (id -> run at)  KEYS[2] active zset (id -> lease end)  KEYS[3] data hash (id -> json)
-- KEYS[4] dead zset  KEYS[5] stats hash  KEYS[6] errors hash
-- KEYS[7] runs hash (id -> '<attempts>:<fencing token>:<run at of the latest delivery>', once delivered)
-- ARGV: per task: id, payload json, 'at' | 'in', ms, replace '1' | '0'
-- Returns {now, earliest run time of the shard, then per task: created 1 | kept 0, runAt, state of a kept task or ''}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now, 0}
local created = 0
for a = 1, #ARGV, 5 do
  local id = ARGV[a]
  local runAt = tonumber(ARGV[a + 3])
  if ARGV[a + 2] == 'in' then runAt = now + runAt end
  local kept = false
  if redis.call('HEXISTS', KEYS[3], id) == 1 then
    if ARGV[a + 4] == '0' then
      kept = true
      local due = redis.call('ZSCORE', KEYS[1], id)
      if due then
        out[#out + 1] = 0
        out[#out + 1] = tonumber(due)
        out[#out + 1] = 'scheduled'
      else
        local last = string.match(redis.call('HGET', KEYS[7], id) or '0:0:0', ':(%d+)$')
        local state = 'dead'
        if redis.call('ZSCORE', KEYS[2], id) then state = 'active' end
        out[#out + 1] = 0
        out[#out + 1] = tonumber(last)
        out[#out + 1] = state
      end
    else
      -- Replacing a running task detaches it: its token goes with its runs entry, so its ack cannot
      -- delete this one; the new task starts with no attempts.
      redis.call('ZREM', KEYS[2], id)
      redis.call('ZREM', KEYS[4], id)
      redis.call('HDEL', KEYS[6], id)
      redis.call('HDEL', KEYS[7], id)
    end
  end
  if not kept then
    redis.call('ZADD', KEYS[1], runAt, id)
    redis.call('HSET', KEYS[3], id, ARGV[a + 1])
    created = created + 1
    out[#out + 1] = 1
    out[#out + 1] = runAt
    out[#out + 1] = ''
  end
end
if created > 0 then redis.call('HINCRBY', KEYS[5], 'scheduled', created) end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #head > 0 then out[2] = tonumber(head[2]) else out[2] = -1 end
return out
