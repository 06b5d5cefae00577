--- @include "entries"
-- Uses the including script's locals: now, batch, maxWait, readyKey, lastPushKey.

-- After a group was handled (or found not claimable): ready again by the usual rule (a full batch now,
-- otherwise once its oldest message waited maxWaitMs), or forgotten when empty. Returns the due time or -1.
local function settle(group, key, len)
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
