-- Schedules (or replaces) tasks by id, in the order given.
-- Input:
--   KEYS[1] due zset (id -> run at)  KEYS[2] active zset (id -> lease end)  KEYS[3] data hash (id -> json)
--   KEYS[4] dead zset  KEYS[5] stats hash  KEYS[6] errors hash
--   KEYS[7] runs hash (id -> '<attempts>:<fencing token>:<run at of the latest delivery>', once delivered)
--   ARGV    per task: id, payload json, 'at' | 'in', ms, replace '1' | '0'
-- Output: {now, earliest run time of the shard, then per task: created 1 | kept 0, runAt, state of a kept task or ''}
local dueKey, activeKey, dataKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local errorsKey, runsKey = KEYS[6], KEYS[7]
--- @include "now"
local now = serverNow()
local out = {now, 0}
local created = 0
for a = 1, #ARGV, 5 do
  local id = ARGV[a]
  local runAt = tonumber(ARGV[a + 3])
  if ARGV[a + 2] == 'in' then runAt = now + runAt end
  local kept, replaced = false, false
  if redis.call('HEXISTS', dataKey, id) == 1 then
    if ARGV[a + 4] == '0' then
      kept = true
      local due = redis.call('ZSCORE', dueKey, id)
      if due then
        out[#out + 1] = 0
        out[#out + 1] = tonumber(due)
        out[#out + 1] = 'scheduled'
      else
        local last = string.match(redis.call('HGET', runsKey, id) or '0:0:0', ':(%d+)$')
        local state = 'dead'
        if redis.call('ZSCORE', activeKey, id) then state = 'active' end
        out[#out + 1] = 0
        out[#out + 1] = tonumber(last)
        out[#out + 1] = state
      end
    else
      replaced = true
    end
  end
  if not kept then
    -- ZADD first: a full Redis refuses a schedule, a replacing one too, before anything is written
    -- (a script whose first write cannot grow memory would be let through).
    redis.call('ZADD', dueKey, runAt, id)
    if replaced then
      -- Replacing a running task detaches it: its token goes with its runs entry, so its ack cannot
      -- delete this one; the new task starts with no attempts.
      redis.call('ZREM', activeKey, id)
      redis.call('ZREM', deadKey, id)
      redis.call('HDEL', errorsKey, id)
      redis.call('HDEL', runsKey, id)
    end
    redis.call('HSET', dataKey, id, ARGV[a + 1])
    created = created + 1
    out[#out + 1] = 1
    out[#out + 1] = runAt
    out[#out + 1] = ''
  end
end
if created > 0 then redis.call('HINCRBY', statsKey, 'scheduled', created) end
local head = redis.call('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
if #head > 0 then out[2] = tonumber(head[2]) else out[2] = -1 end
return out
