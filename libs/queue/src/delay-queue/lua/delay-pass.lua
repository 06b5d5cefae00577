-- Begins, renews or ends a pass of the task source on one shard, in the shard's passes hash: `seq`
-- (the shard's write sequence number while passes run), `n` (passes running), `p:<pass>` (the sequence
-- number when that pass began) and `w:<task id>` (see pass-stamp). The hash lives while a pass renews it:
-- one whose process died stops renewing, and the hash (its stamps with it) expires `leaseMs` later
-- unless another pass runs; the last pass to end deletes it.
-- Input:
--   KEYS[1] passes hash
--   ARGV[1] 'begin' | 'renew' | 'end'  ARGV[2] the pass' id  ARGV[3] lease ms
-- Output: 1; 0 for a renewal of a pass the hash no longer holds (it expired: the pass must fail).
local passesKey = KEYS[1]
local op, pass, leaseMs = ARGV[1], 'p:' .. ARGV[2], tonumber(ARGV[3])
if op == 'end' then
  if redis.call('HDEL', passesKey, pass) == 1 and redis.call('HINCRBY', passesKey, 'n', -1) <= 0 then
    redis.call('UNLINK', passesKey)
  end
  return 1
end
if op == 'begin' then
  redis.call('HSET', passesKey, pass, redis.call('HINCRBY', passesKey, 'seq', 0))
  redis.call('HINCRBY', passesKey, 'n', 1)
elseif redis.call('HEXISTS', passesKey, pass) == 0 then
  return 0
end
-- Every pass' lease is the same: the latest begin or renewal sets when the hash expires.
redis.call('PEXPIRE', passesKey, leaseMs)
return 1
