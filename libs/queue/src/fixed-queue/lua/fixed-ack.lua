-- Finishes deliveries of an ordered FixedQueue, each only if its token still holds the group: an
-- at-least-once delivery trims the head entries it still owns (fewer if pushes evicted some meanwhile),
-- an at-most-once one only lets go of the group. The group is then ready again for its next batch.
-- An acknowledgement from a worker whose lease ran out (the group moved on) changes nothing.
-- A delivery acknowledged with `next` set hands its slot straight to the group's next batch when one
-- is due now (and neither the queue nor the group is paused): claimed here as fixed-claim-ordered would, and returned with its
-- entries, which saves the consumer a claim call per batch. At most `maxEntries` entries and about
-- `maxBytes` bytes are handed out per call. With groupRateLimit, a next batch is handed over only when
-- the group's window allows it, and a group ready again is due no sooner than that.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] leases zset
--   KEYS[6] errors hash  KEYS[7] paused-groups hash  KEYS[7+i] list of delivery i's group, then with
--   groupRateLimit KEYS[7+n+i] its rate list (n deliveries)
--   ARGV[1] batchSize  ARGV[2] maxWaitMs  ARGV[3] maxAgeMs (0: none)  ARGV[4] mode (1 at-most-once,
--   2 at-least-once)  ARGV[5] leaseMs  ARGV[6] token base (random per call)  ARGV[7] maxEntries
--   ARGV[8] maxBytes  ARGV[9] groupRateLimit's max (0: none)  ARGV[10] its durationMs, then per delivery:
--   group, token, next ('1': hand over the next batch)
-- Output: {now, earliest due time set or -1, then per delivery: when its group is due again (-1 when it
--   holds nothing more, -2 when the delivery was stale, -3 when its next batch follows), messages
--   discarded for age, then for -3: the next batch's token, its entry count n, and its n entries}
local readyKey, statsKey, lastPushKey, heldKey, leasesKey, errorsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local pausedKey = KEYS[7]
--- @include "now"
local now = serverNow()
local batch, maxWait, maxAge = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local atLeastOnce = ARGV[4] == '2'
local lease, base, maxEntries, maxBytes = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local rateMax, rateWindow = tonumber(ARGV[9]), tonumber(ARGV[10])
local rated = rateMax > 0

--- @include "held"
--- @include "entries"
--- @include "settle"
--- @include "paused"
--- @include "paused-groups"
--- @include "rate-limit"

local handing = not isPaused(statsKey)
local handedEntries, handedBytes = 0, 0
local out = {now, -1}
local delivered, pending, expiredTotal = 0, 0, 0
local first = 8
-- The deliveries' lists, then (rated) as many rate lists.
local last = #KEYS
if rated then last = first + math.floor((#KEYS - first + 1) / 2) - 1 end
for k = first, last do
  local at = 3 * (k - first) + 11
  local key, group, token, next = KEYS[k], ARGV[at], ARGV[at + 1], ARGV[at + 2] == '1'
  local rateKey = rated and KEYS[k + last - first + 1]
  local holder, count = parseHeld(redis.call('HGET', heldKey, group))
  if holder ~= '' and holder == token then
    local len = redis.call('LLEN', key)
    if count > 0 then
      redis.call('LTRIM', key, count, -1)
      len = len - count
      delivered = delivered + count
      pending = pending - count
    end
    redis.call('HDEL', heldKey, group)
    redis.call('HDEL', errorsKey, group)
    local expired = 0
    local nextToken, entries
    local handover = next and handing and len > 0 and handedEntries < maxEntries and handedBytes < maxBytes
      and not isGroupPaused(pausedKey, group)
    if handover and rated then handover = rateAllowsAt(rateKey, now, rateMax, rateWindow) <= now end
    if handover then
      if maxAge > 0 then expired = trimOlderThan(key, len, now - maxAge) end
      len = len - expired
      if len > 0 and (len >= batch or stampOf(redis.call('LINDEX', key, 0)) + maxWait <= now) then
        local n = math.min(batch, len, maxEntries - handedEntries)
        entries = redis.call('LRANGE', key, 0, n - 1)
        for i = 1, n do handedBytes = handedBytes + #entries[i] end
        handedEntries = handedEntries + n
        nextToken = base .. '.' .. (k - first + 1)
        if atLeastOnce then
          redis.call('HSET', heldKey, group, heldRecord(nextToken, n, 1, 0))
        else
          redis.call('LTRIM', key, n, -1)
          len = len - n
          delivered = delivered + n
          pending = pending - n
          redis.call('HSET', heldKey, group, heldRecord(nextToken, 0, 1, 0))
        end
      end
    end
    if nextToken then
      redis.call('ZADD', leasesKey, now + lease, group)
      redis.call('ZREM', readyKey, group)
      if len == 0 then redis.call('ZREM', lastPushKey, group) end
      if rated then rateStart(rateKey, now, rateMax, rateWindow) end
      out[#out + 1] = -3
      out[#out + 1] = expired
      out[#out + 1] = nextToken
      out[#out + 1] = #entries
      for i = 1, #entries do out[#out + 1] = entries[i] end
    else
      redis.call('ZREM', leasesKey, group)
      -- A group paused while its batch was out is let go, and waits for resumeGroup().
      local due = settleUnlessPaused(pausedKey, readyKey, lastPushKey, group, key, len, now, batch, maxWait)
      if rated then due = rateSettled(readyKey, rateKey, group, due, now, rateMax, rateWindow) end
      if due >= 0 and (out[2] < 0 or due < out[2]) then out[2] = due end
      out[#out + 1] = due
      out[#out + 1] = expired
    end
    expiredTotal = expiredTotal + expired
    pending = pending - expired
  else
    out[#out + 1] = -2
    out[#out + 1] = 0
  end
end
if delivered > 0 then redis.call('HINCRBY', statsKey, 'delivered', delivered) end
if pending ~= 0 then redis.call('HINCRBY', statsKey, 'pending', pending) end
if expiredTotal > 0 then redis.call('HINCRBY', statsKey, 'expired', expiredTotal) end
return out
