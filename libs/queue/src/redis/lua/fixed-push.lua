-- Appends messages to groups of one shard, evicting the oldest beyond capacity, and keeps the
-- shard's ready index (group -> time it becomes due) and counters in step.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] lens hash (group -> length the counters know)
--   KEYS[4] held hash (ordered queues: groups whose batch is out)  KEYS[4+i] list of group i
--   ARGV[1] capacity  ARGV[2] batchSize  ARGV[3] maxWaitMs  ARGV[4] ttlMs
--   ARGV[5] mode: 0 unordered, 1 ordered at-most-once, 2 ordered at-least-once
--   then per group: name, count, its messages joined by '\n' (JSON text never holds a raw newline):
--   one argument per group rather than per message halves the producer's cost of sending them.
-- Output: {now, earliest due time made earlier by this call or -1, dropped of group 1, ...}
local readyKey, statsKey, lensKey, heldKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
--- @include "sliced"
local capacity, batch = tonumber(ARGV[1]), tonumber(ARGV[2])
-- ttlMs stays the string it came as: a Lua number passed to redis.call is formatted with printf, on
-- every visit (measured: a tenth of a visit's cost).
local maxWait, ttl = tonumber(ARGV[3]), ARGV[4]
-- Each entry carries its server time, as a JSON pair, so a batch is one JSON array to the client.
local stamp = '[' .. now .. ','
local out = {now, -1}
local pushed, dropped, expired, pending = 0, 0, 0, 0
local wake = -1
local lens, fresh = {}, {}
local mode = ARGV[5]
local a = 6
for k = 5, #KEYS do
  local key, group, n, joined = KEYS[k], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  a = a + 3
  local len
  if n == 1 then
    -- Most visits bring one message (pushes spread over many groups): no split, no table.
    len = redis.call('RPUSH', key, stamp .. joined .. ']')
  else
    local entries = {}
    local from = 1
    for i = 1, n do
      local stop = string.find(joined, '\n', from, true) or (#joined + 1)
      entries[i] = stamp .. string.sub(joined, from, stop - 1) .. ']'
      from = stop + 1
    end
    len = redis.call('RPUSH', key, unpack(entries))
  end
  local before = len - n
  local evicted = 0
  if len > capacity then
    evicted = len - capacity
    redis.call('LTRIM', key, evicted, -1)
    len = capacity
  end
  redis.call('PEXPIRE', key, ttl)
  local held = false
  if mode ~= '0' and (evicted > 0 or before == 0 or (before < batch and len >= batch)) then
    -- Ordered: a group whose batch is out (or waits for a retry) becomes ready through its
    -- acknowledgement (or its retry time), never through a push. An at-least-once delivery owns the
    -- oldest entries: what eviction took, or what a key that expired lost, it no longer owns.
    local record = redis.call('HGET', heldKey, group)
    if record then
      held = true
      if mode == '2' then
        local holder, count, rest = string.match(record, '^([^:]*):(%d+):(.*)$')
        local lost = evicted
        if before == 0 then lost = tonumber(count) end
        if lost > 0 and tonumber(count) > 0 then
          count = math.max(0, tonumber(count) - lost)
          if count == 0 and holder == '' then
            redis.call('HDEL', heldKey, group)
            held = false
          else
            redis.call('HSET', heldKey, group, holder .. ':' .. count .. ':' .. rest)
          end
        end
      end
    end
  end
  lens[#lens + 1] = group
  lens[#lens + 1] = len
  -- A list that existed holds what the counters know; one that did not may have expired (ttlMs) with
  -- messages the counters still count: those are read below, for all new lists at once.
  if before == 0 then fresh[#fresh + 1] = group end
  pending = pending + len - before
  pushed = pushed + n
  dropped = dropped + evicted
  -- A non-empty list of a group not held always has its ready entry (a claim removes it only with the
  -- last message, or while it holds the group), so the index changes only when the group appears or
  -- fills up; LT keeps an earlier due time.
  if not held and (before == 0 or (before < batch and len >= batch)) then
    local due = now + maxWait
    if len >= batch then due = now end
    if redis.call('ZADD', readyKey, 'LT', 'CH', due, group) == 1 and (wake < 0 or due < wake) then wake = due end
  end
  out[#out + 1] = evicted
end
-- This loop runs per group per call and Lua's calls into Redis are most of a push's cost there, so the
-- known lengths are read and written with one command each for the whole call. A group comes once per
-- call, so reading after the pushes still reads what the counters knew before them.
if #fresh > 0 then
  local known = sliced('HMGET', lensKey, fresh)
  for i = 1, #fresh do
    local lost = tonumber(known[i] or '0')
    expired = expired + lost
    pending = pending - lost
  end
end
sliced('HSET', lensKey, lens)
out[2] = wake
redis.call('HINCRBY', statsKey, 'pushed', pushed)
redis.call('HINCRBY', statsKey, 'pending', pending)
if dropped > 0 then redis.call('HINCRBY', statsKey, 'dropped', dropped) end
if expired > 0 then redis.call('HINCRBY', statsKey, 'expired', expired) end
return out
