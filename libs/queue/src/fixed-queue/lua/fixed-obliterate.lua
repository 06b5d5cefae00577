-- Deletes one shard of a FixedQueue a page of groups per call (obliterate), so that no call blocks
-- Redis for long. The last-push index names every group that has a list: each call deletes the lists
-- the previous one named and names the next page. The call that finds the index empty deletes the
-- shard's own keys with it, in the same script, so a push between two calls cannot leave a list
-- nothing names.
-- UNLINK, not DEL: Redis frees a large value (a hash of dead batches, a long list) in a background
-- thread, so a call's cost does not grow with the size of what it deletes.
-- Input:
--   KEYS[1] last-push zset  KEYS[2..n] the shard's other keys (n = ARGV[1])  KEYS[n+i] list of group i,
--   then (groupRateLimit) their rate lists, which are deleted with them (those of groups without a list
--   expire by themselves within the rate's window)
--   ARGV[1] n  ARGV[2] most groups to name, then from ARGV[3] the group of each list, in the order of KEYS
-- Output: {group...}: the next page, whose lists the next call deletes; empty once the shard is gone.
local lastPushKey, n = KEYS[1], tonumber(ARGV[1])
if #KEYS > n then
  redis.call('UNLINK', unpack(KEYS, n + 1))
  redis.call('ZREM', lastPushKey, unpack(ARGV, 3))
end
local page = redis.call('ZRANGE', lastPushKey, 0, tonumber(ARGV[2]) - 1)
if #page == 0 then redis.call('UNLINK', unpack(KEYS, 1, n)) end
return page
