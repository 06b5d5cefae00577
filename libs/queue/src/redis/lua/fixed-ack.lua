-- Finishes deliveries of an ordered FixedQueue, each only if its token still holds the group: an
-- at-least-once delivery trims the head entries it still owns (fewer if pushes evicted some meanwhile),
-- an at-most-once one only lets go of the group. The group is then ready again for its next batch.
-- An acknowledgement from a worker whose lease ran out (the group moved on) changes nothing.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] leases zset
--   KEYS[6] errors hash  KEYS[6+i] list of delivery i's group
--   ARGV[1] batchSize  ARGV[2] maxWaitMs, then per delivery: group, token
-- Output: {now, earliest due time set or -1, then per delivery: when its group is due again, -1 when it
--   holds nothing more, -2 when the delivery was stale}
local readyKey, statsKey, lastPushKey, heldKey, leasesKey, errorsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
--- @include "now"
local now = serverNow()
local batch, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2])

--- @include "held"
--- @include "settle"

local out = {now, -1}
local delivered = 0
local first = 7
for k = first, #KEYS do
  local key, group, token = KEYS[k], ARGV[2 * (k - first) + 3], ARGV[2 * (k - first) + 4]
  local holder, count = parseHeld(redis.call('HGET', heldKey, group))
  if holder ~= '' and holder == token then
    local len = redis.call('LLEN', key)
    if count > 0 then
      redis.call('LTRIM', key, count, -1)
      len = len - count
      delivered = delivered + count
      redis.call('HINCRBY', statsKey, 'pending', -count)
    end
    redis.call('HDEL', heldKey, group)
    redis.call('HDEL', errorsKey, group)
    redis.call('ZREM', leasesKey, group)
    local due = settle(readyKey, lastPushKey, group, key, len, now, batch, maxWait)
    if due >= 0 and (out[2] < 0 or due < out[2]) then out[2] = due end
    out[#out + 1] = due
  else
    out[#out + 1] = -2
  end
end
if delivered > 0 then redis.call('HINCRBY', statsKey, 'delivered', delivered) end
return out
