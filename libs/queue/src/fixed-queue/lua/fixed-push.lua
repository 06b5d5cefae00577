-- Appends messages to groups of one shard, evicting the oldest beyond capacity, and keeps the
-- shard's ready index (group -> time it becomes due) and counters in step.
-- Measured, this loop is most of a push's cost in Redis, so a visit to a group that already has
-- messages is one RPUSH: nothing per visit refreshes a TTL or writes a length (ttlMs is applied by
-- fixed-expire from the last-push index and each list's newest entry), and the group's name is only
-- cut from its key when the ready index or the held hash need it.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset (group -> a time it was pushed to)
--   KEYS[4] held hash (ordered queues: groups whose batch is out)  KEYS[5] paused-groups hash
--   KEYS[5+i] list of group i
--   ARGV[1] capacity  ARGV[2] batchSize  ARGV[3] maxWaitMs
--   ARGV[4] mode: 0 unordered, 1 ordered at-most-once, 2 ordered at-least-once
--   ARGV[5] length of a list key before its group's name
--   ARGV[6] a trace carrier (traced queues, see traced-json.ts) for the messages that carry none, or ''
--   ARGV[6+i] the messages of group i: one message, or several, each after a '\n' (JSON text never
--   holds a raw newline): one argument per group rather than per message halves the producer's cost.
--   Then, for a call whose visits carry call keys, the call-keys section (a keyed visit is one push).
-- Output: {now, earliest due time made earlier by this call or -1, then for each group that lost
--   messages to capacity: its position i, how many (a keyed visit an earlier try applied: what it lost then;
--   -1: a late try of its call, which wrote nothing; see the call-keys include)}
local readyKey, statsKey, lastPushKey, heldKey, pausedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
--- @include "now"
local now = serverNow()
--- @include "sliced"
--- @include "held"
--- @include "paused-groups"
--- @include "call-keys"
local capacity, batch, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, nameFrom = ARGV[4], tonumber(ARGV[5]) + 1
-- Each entry carries its server time, as a JSON pair, so a batch is one JSON array to the client.
local stamp = '[' .. now .. ','
-- A traced message that carries no creation context of its own (`0,"<carrier>",` in front of its
-- JSON, which a JSON text never starts with) takes the call's: in the stamp, built once.
local traced = ARGV[6] ~= ''
local bare = stamp
if traced then bare = stamp .. '0,"' .. ARGV[6] .. '",' end
local function stampOf(text, from)
  local first, second = string.byte(text, from, from + 1)
  if first == 48 and second == 44 then return stamp end
  return bare
end
local out = {now, -1}
local pushed, dropped, pending = 0, 0, 0
local wake = -1
local fresh = {}
-- Whether any group of the shard is paused: read once, when a group first needs the answer.
local anyPaused
local calls, deadlines, window, keyed = {}, {}, nil, 0
if #ARGV > #KEYS + 1 then calls, deadlines, window, keyed = callKeys() end
for k = 6, #KEYS - keyed do
  local callRecord = calls[k - 5]
  local first = firstAnswer(callRecord)
  if first then
    if first ~= '0' then
      out[#out + 1] = k - 5
      out[#out + 1] = tonumber(first)
    end
  elseif callRecord and isLate(deadlines[k - 5], now) then
    out[#out + 1] = k - 5
    out[#out + 1] = -1
  else
    local key, payload = KEYS[k], ARGV[k + 1]
    local len, n
    if string.byte(payload, 1) ~= 10 then
      -- Most visits bring one message (pushes spread over many groups): no split, no table.
      n = 1
      local head = stamp
      if traced then head = stampOf(payload, 1) end
      len = redis.call('RPUSH', key, head .. payload .. ']')
    else
      local entries = {}
      local from = 2
      n = 0
      while from do
        local stop = string.find(payload, '\n', from, true)
        n = n + 1
        local head = stamp
        if traced then head = stampOf(payload, from) end
        entries[n] = head .. string.sub(payload, from, (stop or (#payload + 1)) - 1) .. ']'
        from = stop and stop + 1
      end
      len = redis.call('RPUSH', key, unpack(entries))
    end
    local before = len - n
    local evicted = 0
    if len > capacity then
      evicted = len - capacity
      redis.call('LTRIM', key, evicted, -1)
      len = capacity
      out[#out + 1] = k - 5
      out[#out + 1] = evicted
    end
    -- A non-empty list of a group neither held nor paused always has its ready entry (a claim removes it only with the
    -- last message, or while it holds the group), so the index changes only when the group appears or
    -- fills up. An at-least-once delivery owns the oldest entries: what eviction took, it no longer owns.
    local fills = before < batch and len >= batch
    if before == 0 or fills or (evicted > 0 and mode == '2') then
      local group = string.sub(key, nameFrom)
      if before == 0 then
        fresh[#fresh + 1] = now
        fresh[#fresh + 1] = group
      end
      local held = false
      if mode ~= '0' then
        -- Ordered: a group whose batch is out (or waits for a retry) becomes ready through its
        -- acknowledgement (or its retry time), never through a push.
        local record = redis.call('HGET', heldKey, group)
        if record then
          held = true
          if mode == '2' and evicted > 0 then held = evictHeld(heldKey, group, record, evicted) end
        end
      end
      if not held and (before == 0 or fills) and anyPaused == nil then
        anyPaused = redis.call('EXISTS', pausedKey) == 1
      end
      -- A paused group takes pushes but stays out of the ready index until resumeGroup().
      if not held and (before == 0 or fills) and not (anyPaused and isGroupPaused(pausedKey, group)) then
        local due = now + maxWait
        if len >= batch then due = now end
        -- LT keeps an earlier due time.
        if redis.call('ZADD', readyKey, 'LT', 'CH', due, group) == 1 and (wake < 0 or due < wake) then wake = due end
      end
    end
    pending = pending + len - before
    pushed = pushed + n
    dropped = dropped + evicted
    if callRecord then remember(callRecord, evicted, window, deadlines[k - 5], now) end
  end
end
-- A list that appears is (again) one the expiry must watch; the others already have their entry,
-- perhaps older than their last push, which fixed-expire corrects when it reaches it.
if #fresh > 0 then sliced('ZADD', lastPushKey, fresh) end
out[2] = wake
redis.call('HINCRBY', statsKey, 'pushed', pushed)
redis.call('HINCRBY', statsKey, 'pending', pending)
if dropped > 0 then redis.call('HINCRBY', statsKey, 'dropped', dropped) end
return out
