-- Lists the most recent dead batches of one shard.
-- KEYS[1] dead zset  KEYS[2] dead records hash   ARGV[1] most to list (at most 1,000)
-- Returns {id, record JSON, ...}, newest first.
local deadKey, recordsKey = KEYS[1], KEYS[2]
local ids = redis.call('ZRANGE', deadKey, 0, tonumber(ARGV[1]) - 1, 'REV')
local out = {}
for i = 1, #ids do
  local record = redis.call('HGET', recordsKey, ids[i])
  if record then
    out[#out + 1] = ids[i]
    out[#out + 1] = record
  end
end
return out
