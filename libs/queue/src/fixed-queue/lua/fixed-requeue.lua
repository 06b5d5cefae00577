-- Brings a dead batch back: its messages are appended to their group as if pushed now (fresh times,
-- so maxAgeMs counts from now; capacity evicts the oldest as a push does), with attempts starting over.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] dead zset
--   KEYS[6] dead records hash  KEYS[7] paused-groups hash  KEYS[8] the group's list
--   ARGV[1] id  ARGV[2] group  ARGV[3] capacity  ARGV[4] batchSize  ARGV[5] maxWaitMs
-- Output: {1, evicted, due time or -1} or {0} when no such dead batch (of that group) exists.
local readyKey, statsKey, lastPushKey, heldKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadKey, recordsKey, pausedKey, key = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
--- @include "now"
local now = serverNow()
--- @include "held"
--- @include "paused-groups"
local id, group, capacity = ARGV[1], ARGV[2], tonumber(ARGV[3])
local batch, maxWait = tonumber(ARGV[4]), tonumber(ARGV[5])

local record = redis.call('HGET', recordsKey, id)
if not record then return {0} end
-- A JSON header, then the entries one a line (see the bury include).
local newline = string.find(record, '\n', 1, true)
if cjson.decode(string.sub(record, 1, newline - 1)).group ~= group then return {0} end
local before = redis.call('LLEN', key)
local len = before
local stamp = '[' .. now .. ','
local entries = {}
local requeued = 0
local from = newline + 1
while from <= #record do
  local stop = string.find(record, '\n', from, true) or (#record + 1)
  -- '[<13-digit ms>,' is 15 characters: keep the message and its closing bracket, with a new time.
  entries[#entries + 1] = stamp .. string.sub(record, from + 15, stop - 1)
  from = stop + 1
  if #entries == 1000 or from > #record then
    len = redis.call('RPUSH', key, unpack(entries))
    requeued = requeued + #entries
    entries = {}
  end
end
local evicted = 0
if len > capacity then
  evicted = len - capacity
  redis.call('LTRIM', key, evicted, -1)
  len = capacity
  local record = redis.call('HGET', heldKey, group)
  if record then evictHeld(heldKey, group, record, evicted) end
end
-- Re-queued entries are as new as a push's: the expiry counts from now.
redis.call('ZADD', lastPushKey, now, group)
redis.call('ZREM', deadKey, id)
redis.call('HDEL', recordsKey, id)
redis.call('HINCRBY', statsKey, 'pending', len - before)
if evicted > 0 then redis.call('HINCRBY', statsKey, 'dropped', evicted) end
redis.call('HINCRBY', statsKey, 'requeued', requeued)
redis.call('HINCRBY', statsKey, 'deadNow', -requeued)
local due = -1
if redis.call('HEXISTS', heldKey, group) == 0 then
  due = settleUnlessPaused(pausedKey, readyKey, lastPushKey, group, key, len, now, batch, maxWait)
end
return {1, evicted, due}
