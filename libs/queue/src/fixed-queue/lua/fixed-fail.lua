-- Records a failed at-least-once delivery, only if its token still holds the group: the same messages
-- are delivered again after `retryDelayMs` (the group waits: nothing newer overtakes them), or, after
-- `maxAttempts` deliveries, move to the dead letters and the group goes on with its next batch
-- (onExhausted 'dead-letter'), or stay its head with the group paused (onExhausted 'pause-group').
-- A handler that handled the first messages of its batch (PartialBatchError) has those acknowledged
-- first: only the rest fail.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] leases zset
--   KEYS[6] dead zset  KEYS[7] dead records hash  KEYS[8] errors hash  KEYS[9] paused-groups hash
--   KEYS[10] the group's list
--   ARGV[1] batchSize  ARGV[2] maxWaitMs  ARGV[3] group  ARGV[4] token  ARGV[5] retry delay ms
--   ARGV[6] maxAttempts  ARGV[7] dead-letter capacity  ARGV[8] error text  ARGV[9] onExhausted: '1' pause
--   the group, '0' dead-letter the batch  ARGV[10] messages of the batch handled, from its first
--   ARGV[11] messages in the batch as it was delivered
-- Output: {outcome, at, messages acknowledged}: 'retry' and when, 'dead' and when, 'paused' and when,
--   'gone' (nothing left to retry: pushes evicted the rest of the delivery's messages) or 'stale' (the
--   token no longer holds the group).
local readyKey, statsKey, lastPushKey, heldKey, leasesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local deadKey, recordsKey, errorsKey, pausedKey, key = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
--- @include "now"
local now = serverNow()
local batch, maxWait, group, token = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local delay, maxAttempts, deadCapacity = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local handled, size = tonumber(ARGV[10]), tonumber(ARGV[11])

--- @include "held"
--- @include "settle"
--- @include "paused-groups"
--- @include "bury"
--- @include "trim-dead-letters"
-- Dead batches forgotten per call beyond capacity (each holds up to a batch of messages).
local DEAD_TRIM_STEP = 100

local holder, count, attempts = parseHeld(redis.call('HGET', heldKey, group))
if holder == '' or holder ~= token then return {'stale', now, 0} end
-- Every outcome ends the lease, first: a full Redis (maxmemory, noeviction) refuses a script whose
-- first write may grow memory, and a failure must be recorded there too. A retry then grows it by its
-- error text; a burial moves the batch from the list to the dead letters (trimmed to capacity).
redis.call('ZREM', leasesKey, group)
-- The delivery owns the newest `count` of the `size` messages it was given (capacity evicted the
-- others, the oldest): the handled ones still held are the first of those.
local acked = 0
if handled > 0 then acked = math.min(count, math.max(0, handled - (size - count))) end
if acked > 0 then
  redis.call('LTRIM', key, acked, -1)
  count = count - acked
  redis.call('HINCRBY', statsKey, 'delivered', acked)
  redis.call('HINCRBY', statsKey, 'pending', -acked)
end
redis.call('HSET', errorsKey, group, ARGV[8])
if count == 0 then
  redis.call('HDEL', heldKey, group)
  redis.call('HDEL', errorsKey, group)
  settleUnlessPaused(pausedKey, readyKey, lastPushKey, group, key, redis.call('LLEN', key), now, batch, maxWait)
  return {'gone', now, acked}
end
if attempts >= maxAttempts and ARGV[9] == '1' then
  redis.call('HSET', heldKey, group, heldRecord('', count, attempts, 0))
  pauseExhausted(pausedKey, readyKey, group, now)
  return {'paused', now, acked}
end
if attempts >= maxAttempts then
  local len = redis.call('LLEN', key)
  local shard = { stats = statsKey, held = heldKey, leases = leasesKey, dead = deadKey, records = recordsKey, errors = errorsKey }
  local left = bury(shard, group, key, count, attempts, token, now)
  trimDeadLetters(deadKey, deadCapacity, { recordsKey }, DEAD_TRIM_STEP, forgetBuried(shard))
  redis.call('HINCRBY', statsKey, 'pending', left - len)
  settleUnlessPaused(pausedKey, readyKey, lastPushKey, group, key, left, now, batch, maxWait)
  return {'dead', now, acked}
end
local at = now + delay
redis.call('HSET', heldKey, group, heldRecord('', count, attempts, at))
-- A paused group keeps its retry time in its held record: resumeGroup() makes it ready by then.
if not isGroupPaused(pausedKey, group) then redis.call('ZADD', readyKey, at, group) end
return {'retry', at, acked}
