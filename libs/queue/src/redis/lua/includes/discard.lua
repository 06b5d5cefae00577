-- Messages that left a shard without being delivered: no longer pending, counted under `counter`
-- ('dropped' or 'expired'). Uses the including script's statsKey.
local function discard(counter, count)
  if count > 0 then
    redis.call('HINCRBY', statsKey, 'pending', -count)
    redis.call('HINCRBY', statsKey, counter, count)
  end
end
