-- Lists one page of a shard's dead-lettered tasks, newest first. Paged because a dead letter can carry
-- a large error and payload: listing thousands in one script would block Redis for tens of ms.
-- Input:
--   KEYS[1] dead zset  KEYS[2] data hash  KEYS[3] errors hash  KEYS[4] runs hash
--   ARGV[1] most to list  ARGV[2] latest death time to list ('+inf' for the first page)
--   ARGV[3] how many dead at exactly that time the earlier pages listed
-- Output: {id, died at, json, run ('<attempts>:<token>:<runAt>'), last error or false, ...}
local deadKey, dataKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "sliced"
local dead = redis.call('ZRANGE', deadKey, ARGV[2], '-inf', 'BYSCORE', 'REV', 'LIMIT', ARGV[3], ARGV[1], 'WITHSCORES')
local ids = {}
for i = 1, #dead, 2 do ids[#ids + 1] = dead[i] end
local jsons = sliced('HMGET', dataKey, ids)
local runs = sliced('HMGET', runsKey, ids)
local errors = sliced('HMGET', errorsKey, ids)
local out = {}
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = tonumber(dead[2 * i])
  out[#out + 1] = jsons[i] or ''
  out[#out + 1] = runs[i] or '0:0:0'
  out[#out + 1] = errors[i]
end
return out
