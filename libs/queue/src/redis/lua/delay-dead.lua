-- Lists the most recent dead-lettered tasks of one shard.
-- Input:
--   KEYS[1] dead zset  KEYS[2] data hash  KEYS[3] errors hash  KEYS[4] runs hash
--   ARGV[1] most to list
-- Output: {id, died at, json, run ('<attempts>:<token>:<runAt>'), last error or false, ...}
local deadKey, dataKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local out = {}
local dead = redis.call('ZRANGE', deadKey, 0, tonumber(ARGV[1]) - 1, 'REV', 'WITHSCORES')
for i = 1, #dead, 2 do
  out[#out + 1] = dead[i]
  out[#out + 1] = tonumber(dead[i + 1])
  out[#out + 1] = redis.call('HGET', dataKey, dead[i]) or ''
  out[#out + 1] = redis.call('HGET', runsKey, dead[i]) or '0:0:0'
  out[#out + 1] = redis.call('HGET', errorsKey, dead[i])
end
return out
