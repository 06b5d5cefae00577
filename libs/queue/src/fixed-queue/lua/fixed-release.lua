-- Gives unfinished at-least-once deliveries back at shutdown, each only if its token still holds the
-- group: due again at once. A delivery whose handler was interrupted within its time is not counted as
-- an attempt; one whose handler ran past handlerTimeoutMs is (it ran, and did not settle): its next
-- delivery is attempt + 1, and one that was the last is dead-lettered or pauses its group on the next
-- claim, as a lapsed lease is, so that restarting apps cannot loop a poison batch forever.
-- Input:
--   KEYS[1] ready zset  KEYS[2] held hash  KEYS[3] leases zset  KEYS[4] paused-groups hash
--   KEYS[5] stats hash  KEYS[6] errors hash
--   ARGV[1] error text recorded for a counted give-back, then per delivery: group, token, '1' when its
--   attempt counts, else '0'
-- Output: per delivery 1 when given back, 0 when stale
local readyKey, heldKey, leasesKey, pausedKey, statsKey, errorsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
--- @include "now"
local now = serverNow()
--- @include "held"
--- @include "paused-groups"
--- @include "per-delivery"
local given = 0
local out = perDelivery(ARGV, 3, function(a)
  local group = ARGV[a]
  local holder, count, attempts = parseHeld(redis.call('HGET', heldKey, group))
  if holder == '' or holder ~= ARGV[a + 1] then return false end
  -- The lease goes first: a full Redis (maxmemory, noeviction) refuses a script whose first write
  -- may grow memory, and a give-back must go through there (it only moves the group back).
  redis.call('ZREM', leasesKey, group)
  if ARGV[a + 2] == '1' then
    redis.call('HSET', errorsKey, group, ARGV[1])
  else
    attempts = math.max(0, attempts - 1)
  end
  redis.call('HSET', heldKey, group, heldRecord('', count, attempts, 0))
  if not isGroupPaused(pausedKey, group) then redis.call('ZADD', readyKey, now, group) end
  given = given + 1
  return true
end)
if given > 0 then redis.call('HINCRBY', statsKey, 'givenBack', given) end
return out
