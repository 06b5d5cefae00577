-- Lists one page of a shard's dead batches, newest first. Paged because a dead batch holds up to
-- batchSize messages: listing hundreds in one script would block Redis for tens of ms.
-- Input:
--   KEYS[1] dead zset  KEYS[2] dead records hash
--   ARGV[1] most to list  ARGV[2] latest death time to list ('+inf' for the first page)
--   ARGV[3] how many dead at exactly that time the earlier pages listed
-- Output: {id, record JSON, ...}
local deadKey, recordsKey = KEYS[1], KEYS[2]
--- @include "sliced"
local ids = redis.call('ZRANGE', deadKey, ARGV[2], '-inf', 'BYSCORE', 'REV', 'LIMIT', ARGV[3], ARGV[1])
local records = sliced('HMGET', recordsKey, ids)
local out = {}
for i = 1, #ids do
  out[#out + 1] = ids[i]
  out[#out + 1] = records[i]
end
return out
