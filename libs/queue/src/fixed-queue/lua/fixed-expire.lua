-- Deletes groups nobody pushed to for ttlMs, their messages counted expired: the groups an earlier
-- read of the last-push index listed (their lists declared here), each checked again. A group's entry
-- there may be older than its last push (pushes to a group with messages do not touch it): the
-- newest entry of its list tells, and the entry moves up to it. A group whose batch is out, or waits
-- for a retry, is left until then; a paused group (by hand or exhausted) is kept for as long as it is
-- paused: nobody may consume it, so its idleness says nothing (resumeGroup starts its ttlMs again).
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash
--   KEYS[5] paused-groups hash  KEYS[5+i] list of group i
--   ARGV[1] ttlMs, then ARGV[1+i] the name of group i
-- Output: {now, then per group: messages expired}
local readyKey, statsKey, lastPushKey, heldKey, pausedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
--- @include "now"
local now = serverNow()
--- @include "entries"
--- @include "discard"
--- @include "rescore"
local cutoff = now - tonumber(ARGV[1])
local out = {now}
local expired = 0
for k = 6, #KEYS do
  local key, group = KEYS[k], ARGV[k - 4]
  local lost = 0
  local since = redis.call('ZSCORE', lastPushKey, group)
  if since and tonumber(since) <= cutoff then
    local newest = redis.call('LINDEX', key, -1)
    if not newest then
      redis.call('ZREM', lastPushKey, group)
    elseif stampOf(newest) > cutoff then
      rescore(lastPushKey, stampOf(newest), group)
    elseif redis.call('HEXISTS', heldKey, group) == 1 or redis.call('HEXISTS', pausedKey, group) == 1 then
      rescore(lastPushKey, now, group)
    else
      lost = redis.call('LLEN', key)
      redis.call('UNLINK', key)
      redis.call('ZREM', lastPushKey, group)
      redis.call('ZREM', readyKey, group)
      expired = expired + lost
    end
  end
  out[#out + 1] = lost
end
discard(statsKey, 'expired', expired)
return out
