-- Gives a running delivery back (shutdown): due again at once, and the attempt not counted.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] runs hash
--   ARGV[1] id  ARGV[2] token
-- Output: 1 when released, 0 when the token is stale.
local dueKey, activeKey, runsKey = KEYS[1], KEYS[2], KEYS[3]
--- @include "now"
local now = serverNow()
local id = ARGV[1]
local run = redis.call('HGET', runsKey, id)
if not run then return 0 end
local attempts, token, runAt, dueAt = string.match(run, '^(%d+):([^:]+):(%d+):?(%d*)$')
if token ~= ARGV[2] or redis.call('ZREM', activeKey, id) == 0 then return 0 end
attempts = tonumber(attempts) - 1
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
