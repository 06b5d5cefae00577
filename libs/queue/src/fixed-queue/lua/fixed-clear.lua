-- Deletes a group's messages (FixedQueue.clear), counted as dropped, with its ready entry. A delivery
-- of the group under way (ordered) finishes harmlessly: its held record keeps the token but owns no
-- entries any more, so its acknowledgement trims none of the messages pushed after the clear, and the
-- group stays held (no second batch of it in flight) until then. A retry waiting for its backoff has
-- nothing left to retry: the group is let go.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] errors hash
--   KEYS[6] the group's list
--   ARGV[1] group
-- Output: messages deleted
local readyKey, statsKey, lastPushKey, heldKey, errorsKey, key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
--- @include "held"
--- @include "discard"
local group = ARGV[1]
local len = redis.call('LLEN', key)
redis.call('UNLINK', key)
redis.call('ZREM', lastPushKey, group)
redis.call('ZREM', readyKey, group)
local holder, count, attempts = parseHeld(redis.call('HGET', heldKey, group))
if holder ~= '' then
  if count > 0 then redis.call('HSET', heldKey, group, heldRecord(holder, 0, attempts, 0)) end
else
  redis.call('HDEL', heldKey, group)
  redis.call('HDEL', errorsKey, group)
end
discard(statsKey, 'dropped', len)
return len
