--- @include "settle"
-- pauseGroup() records a group in its shard's paused-groups hash: group -> '<paused at>:<reason>'
-- (reason 'manual', or 'exhausted' when its batch failed its last attempt under onExhausted
-- 'pause-group'). A paused group is never in the ready index, so claims never meet it and cost what
-- they cost without it: every script that would make it ready (a push, an acknowledgement, a failure,
-- a lease that ran out, a give-back, a requeue) leaves it out instead, and resumeGroup() puts it back.
local function isGroupPaused(pausedKey, group) return redis.call('HEXISTS', pausedKey, group) == 1 end

-- `settle`, for a group that may be paused: a paused group holding messages stays out of the ready
-- index (-1). Returns the due time or -1.
local function settleUnlessPaused(pausedKey, readyKey, lastPushKey, group, key, len, now, batch, maxWait)
  if len > 0 and isGroupPaused(pausedKey, group) then return -1 end
  return settle(readyKey, lastPushKey, group, key, len, now, batch, maxWait)
end

-- onExhausted 'pause-group': a batch failed its last attempt and stays its group's head (the caller
-- keeps its held record); the group leaves the ready index, paused with reason 'exhausted', so that
-- resumeGroup() delivers that batch again from attempt 1.
local function pauseExhausted(pausedKey, readyKey, group, now)
  redis.call('ZREM', readyKey, group)
  redis.call('HSET', pausedKey, group, now .. ':exhausted')
end
