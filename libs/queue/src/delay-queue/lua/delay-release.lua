-- Gives a running delivery back (shutdown): due again at once. A delivery whose handler was interrupted
-- within its time is not counted as an attempt; one whose handler ran past handlerTimeoutMs is (it ran,
-- and did not settle): its next delivery is attempt + 1, and the claim that meets one past its last
-- attempt dead-letters it (a repeat's occurrence is given up instead), so that restarting apps cannot
-- loop a poison task forever. A task scheduled again while this delivery ran has its successor made
-- due instead (see successor).
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] runs hash  KEYS[4] stats hash  KEYS[5] errors hash
--   KEYS[6] successors hash
--   ARGV[1] id  ARGV[2] token  ARGV[3] '1' when its attempt counts, else '0'  ARGV[4] error text recorded then
--   ARGV[5] maxAttempts, or absent (a 0.2.0 caller)
-- Output: 1 when released, 0 when the token is stale.
local dueKey, activeKey, runsKey, statsKey, errorsKey, successorsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
--- @include "now"
--- @include "successor"
local now = serverNow()
local id = ARGV[1]
local run = redis.call('HGET', runsKey, id)
if not run then return 0 end
local attempts, token, runAt, dueAt = string.match(run, '^(%d+):([^:]+):(%d+):?(%d*)$')
if token ~= ARGV[2] or redis.call('ZREM', activeKey, id) == 0 then return 0 end
redis.call('HINCRBY', statsKey, 'givenBack', 1)
if promoteSuccessor(successorsKey, dueKey, runsKey, errorsKey, id) then return 1 end
attempts = tonumber(attempts)
if ARGV[3] == '1' then
  redis.call('HSET', errorsKey, id, ARGV[4])
  -- Counted as its lease running out would count it (delay-claim): a retry, unless it was the last attempt.
  if ARGV[5] and attempts < tonumber(ARGV[5]) then redis.call('HINCRBY', statsKey, 'retried', 1) end
else
  attempts = attempts - 1
end
-- A task never delivered has no runs entry: one released from its first delivery is back to that.
if attempts == 0 then
  redis.call('HDEL', runsKey, id)
else
  -- Due again now, but late since its own due time (see delay-claim).
  if dueAt == '' then dueAt = runAt end
  redis.call('HSET', runsKey, id, attempts .. ':' .. token .. ':' .. runAt .. ':' .. dueAt)
end
redis.call('ZADD', dueKey, now, id)
return 1
