-- Deletes one shard of a FixedQueue a page of groups per call (obliterate), so that no call blocks
-- Redis for long. The lens hash names every group that has a list: each call deletes the lists the
-- previous one named and names the next page. The call that finds lens empty deletes the shard's own
-- keys with it, in the same script, so a push between two calls cannot leave a list nothing names.
-- UNLINK, not DEL: Redis frees a large value (a hash of dead batches, a long list) in a background
-- thread, so a call's cost does not grow with the size of what it deletes.
-- Input:
--   KEYS[1] lens hash  KEYS[2..n] the shard's other keys (n = ARGV[1])  KEYS[n+i] list of group i
--   ARGV[1] n  ARGV[2] most groups to name  ARGV[3] most entries the named groups may hold (one group
--   is named whatever its size), then from ARGV[4] the group of each list, in the order of KEYS
-- Output: {group...}: the next page, whose lists the next call deletes; empty once the shard is gone.
local lensKey, n = KEYS[1], tonumber(ARGV[1])
local maxGroups, maxEntries = tonumber(ARGV[2]), tonumber(ARGV[3])
if #KEYS > n then
  redis.call('UNLINK', unpack(KEYS, n + 1))
  redis.call('HDEL', lensKey, unpack(ARGV, 4))
end
local page = redis.call('HRANDFIELD', lensKey, maxGroups, 'WITHVALUES')
if #page == 0 then
  redis.call('UNLINK', unpack(KEYS, 1, n))
  return {}
end
local named, entries = {}, 0
for i = 1, #page, 2 do
  local len = tonumber(page[i + 1])
  if #named > 0 and entries + len > maxEntries then break end
  named[#named + 1] = page[i]
  entries = entries + len
end
return named
