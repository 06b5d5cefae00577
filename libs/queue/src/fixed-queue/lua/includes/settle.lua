--- @include "entries"
-- After a group was handled (or found not claimable): ready again by the usual rule (a full batch now,
-- otherwise once its oldest message waited maxWaitMs), or forgotten when empty. `key` is the group's
-- list, `len` its length. Returns the due time or -1.
local function settle(readyKey, lastPushKey, group, key, len, now, batch, maxWait)
  if len == 0 then
    redis.call('ZREM', readyKey, group)
    redis.call('ZREM', lastPushKey, group)
    return -1
  end
  local due = now
  if len < batch then due = stampOf(redis.call('LINDEX', key, 0)) + maxWait end
  redis.call('ZADD', readyKey, due, group)
  return due
end
