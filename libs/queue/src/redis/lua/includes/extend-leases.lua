--- @include "rescore"
--- @include "per-delivery"
-- Extends to `leaseEnd` the lease (score in the zset `leasesKey`) of each delivery in `argv`, named by
-- (member, token) pairs after the lease length, while `runs(member, token)` says that token still runs
-- it. Replies per delivery 1 when extended, 0 when lost.
local function extendLeases(leasesKey, leaseEnd, argv, runs)
  return perDelivery(argv, 2, function(a)
    local member = argv[a]
    if not (runs(member, argv[a + 1]) and redis.call('ZSCORE', leasesKey, member)) then return false end
    rescore(leasesKey, leaseEnd, member)
    return true
  end)
end
