-- Messages that left a shard without being delivered: no longer pending, counted under `counter`
-- ('dropped' or 'expired') in the shard's stats hash.
local function discard(statsKey, counter, count)
  if count > 0 then
    redis.call('HINCRBY', statsKey, 'pending', -count)
    redis.call('HINCRBY', statsKey, counter, count)
  end
end
