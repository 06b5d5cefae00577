-- Fails a delivery (same fencing as ack): schedules the retry after a backoff, or dead-letters the
-- task once it has had maxAttempts deliveries. A task scheduled again while this delivery ran is not
-- retried: its successor is made due instead (see successor), from attempt 1.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] stats hash
--   KEYS[6] errors hash  KEYS[7] runs hash  KEYS[8] successors hash  KEYS[9] passes hash (see pass-stamp)
--   ARGV[1] id  ARGV[2] token  ARGV[3] maxAttempts  ARGV[4] retry delay ms  ARGV[5] dead-letter capacity
--   ARGV[6] error text
-- Output: {1, 'retry', runAt} | {1, 'dead', now} | {0} when the token is stale ('retry' and the
--   successor's run time when one took its place)
local dueKey, activeKey, dataKey, deadKey, statsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local errorsKey, runsKey, successorsKey, passesKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
--- @include "now"
--- @include "pass-stamp"
local now = serverNow()
--- @include "trim-dead-letters"
--- @include "successor"
-- Dead letters forgotten per call beyond capacity.
local DEAD_TRIM_STEP = 500
local id = ARGV[1]
local run = redis.call('HGET', runsKey, id)
if not run then return {0} end
local attempts, token, ranAt = string.match(run, '^(%d+):([^:]+):(%d+)')
if token ~= ARGV[2] or not redis.call('ZSCORE', activeKey, id) then return {0} end
stampWrite(passesKey, id)
-- The retry is due at its own time: a due time carried from a lapsed lease (see delay-claim) ends here.
if string.match(run, '^%d+:[^:]+:%d+:%d+$') then
  redis.call('HSET', runsKey, id, attempts .. ':' .. token .. ':' .. ranAt)
end
redis.call('ZREM', activeKey, id)
local successor = promoteSuccessor(successorsKey, dueKey, runsKey, errorsKey, id)
if successor then
  redis.call('HINCRBY', statsKey, 'retried', 1)
  return {1, 'retry', successor}
end
redis.call('HSET', errorsKey, id, ARGV[6])
if tonumber(attempts) >= tonumber(ARGV[3]) then
  redis.call('ZADD', deadKey, now, id)
  redis.call('HINCRBY', statsKey, 'dead', 1)
  trimDeadLetters(deadKey, tonumber(ARGV[5]), { dataKey, errorsKey, runsKey }, DEAD_TRIM_STEP)
  return {1, 'dead', now}
end
local runAt = now + tonumber(ARGV[4])
redis.call('ZADD', dueKey, runAt, id)
redis.call('HINCRBY', statsKey, 'retried', 1)
return {1, 'retry', runAt}
