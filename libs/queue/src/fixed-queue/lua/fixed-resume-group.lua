-- Resumes a paused group (FixedQueue.resumeGroup): it leaves the paused-groups hash and goes back into
-- the ready index by the usual rule, unless its batch is still out (that batch's acknowledgement puts
-- it back). A batch waiting for its retry (at-least-once) is due at its retry time; one that failed its
-- last attempt (reason 'exhausted') is delivered again at once, from attempt 1.
-- Input:
--   KEYS[1] ready zset  KEYS[2] last-push zset  KEYS[3] held hash  KEYS[4] paused-groups hash
--   KEYS[5] the group's list
--   ARGV[1] group  ARGV[2] batchSize  ARGV[3] maxWaitMs
-- Output: {1 when this call resumed it or 0 when it was not paused, due time or -1 (nothing to hand out,
--   or its batch is out), now}
local readyKey, lastPushKey, heldKey, pausedKey, key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
--- @include "now"
local now = serverNow()
--- @include "held"
--- @include "settle"
local group, batch, maxWait = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local record = redis.call('HGET', pausedKey, group)
if not record then return {0, -1, now} end
-- The paused entry goes first: a full Redis (maxmemory, noeviction) lets a script through only once
-- its first write frees memory.
redis.call('HDEL', pausedKey, group)
-- ttlMs counts from the resume: a pause kept the group however long nobody pushed to it.
if redis.call('ZSCORE', lastPushKey, group) then redis.call('ZADD', lastPushKey, now, group) end
local holder, count, _, notBefore = parseHeld(redis.call('HGET', heldKey, group))
if holder ~= '' then return {1, -1, now} end
if count == 0 then
  return {1, settle(readyKey, lastPushKey, group, key, redis.call('LLEN', key), now, batch, maxWait), now}
end
local due = math.max(notBefore, now)
if string.match(record, ':(%a+)$') == 'exhausted' then
  due = now
  redis.call('HSET', heldKey, group, heldRecord('', count, 0, 0))
end
redis.call('ZADD', readyKey, due, group)
return {1, due, now}
