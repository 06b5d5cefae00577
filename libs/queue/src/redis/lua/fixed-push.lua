-- Appends messages to groups of one shard, evicting the oldest beyond capacity, and keeps the
-- shard's ready index (group -> time it becomes due) and counters in step.
-- KEYS[1] ready zset   KEYS[2] stats hash   KEYS[3] lens hash (group -> length the counters know)
-- KEYS[3+i] list of group i
-- ARGV[1] capacity  ARGV[2] batchSize  ARGV[3] maxWaitMs  ARGV[4] ttlMs
-- then per group: name, count, its messages joined by '\n' (JSON text never holds a raw newline):
-- one argument per group rather than per message halves the producer's cost of sending them.
-- Returns {now, earliest due time made earlier by this call or -1, dropped of group 1, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local capacity, batch = tonumber(ARGV[1]), tonumber(ARGV[2])
local maxWait, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
-- Each entry carries its server time, as a JSON pair, so a batch is one JSON array to the client.
local stamp = '[' .. now .. ','
local out = {now, -1}
local pushed, dropped, expired, pending = 0, 0, 0, 0
local wake = -1
local a = 5
for k = 4, #KEYS do
  local key, group, n, joined = KEYS[k], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  a = a + 3
  local entries = {}
  local from = 1
  for i = 1, n do
    local stop = string.find(joined, '\n', from, true) or (#joined + 1)
    entries[i] = stamp .. string.sub(joined, from, stop - 1) .. ']'
    from = stop + 1
  end
  local len = redis.call('RPUSH', key, unpack(entries))
  local known = tonumber(redis.call('HGET', KEYS[3], group) or '0')
  -- The counters knew more than the list held before: the key expired (ttlMs) in between.
  local before = len - n
  if known > before then expired = expired + known - before end
  local evicted = 0
  if len > capacity then
    evicted = len - capacity
    redis.call('LTRIM', KEYS[k], evicted, -1)
    len = capacity
  end
  redis.call('PEXPIRE', key, ttl)
  redis.call('HSET', KEYS[3], group, len)
  pending = pending + len - known
  pushed = pushed + n
  dropped = dropped + evicted
  local due = now + maxWait
  if len >= batch then due = now end
  -- LT: a group already due earlier keeps its time; CH tells whether this call made it earlier.
  if redis.call('ZADD', KEYS[1], 'LT', 'CH', due, group) == 1 and (wake < 0 or due < wake) then wake = due end
  out[#out + 1] = evicted
end
out[2] = wake
redis.call('HINCRBY', KEYS[2], 'pushed', pushed)
redis.call('HINCRBY', KEYS[2], 'pending', pending)
if dropped > 0 then redis.call('HINCRBY', KEYS[2], 'dropped', dropped) end
if expired > 0 then redis.call('HINCRBY', KEYS[2], 'expired', expired) end
return out
