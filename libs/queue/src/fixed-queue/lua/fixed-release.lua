-- Gives unfinished at-least-once deliveries back at shutdown, each only if its token still holds the
-- group: due again at once, and not counted as an attempt (the handler was interrupted, not failing).
-- Input:
--   KEYS[1] ready zset  KEYS[2] held hash  KEYS[3] leases zset  KEYS[4] paused-groups hash
--   ARGV: per delivery: group, token
-- Output: per delivery 1 when given back, 0 when stale
local readyKey, heldKey, leasesKey, pausedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
local now = serverNow()
--- @include "held"
--- @include "paused-groups"
local out = {}
for a = 1, #ARGV, 2 do
  local group = ARGV[a]
  local holder, count, attempts = parseHeld(redis.call('HGET', heldKey, group))
  if holder ~= '' and holder == ARGV[a + 1] then
    -- The lease goes first: a full Redis (maxmemory, noeviction) refuses a script whose first write
    -- may grow memory, and a give-back must go through there (it only moves the group back).
    redis.call('ZREM', leasesKey, group)
    redis.call('HSET', heldKey, group, heldRecord('', count, math.max(0, attempts - 1), 0))
    if not isGroupPaused(pausedKey, group) then redis.call('ZADD', readyKey, now, group) end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
