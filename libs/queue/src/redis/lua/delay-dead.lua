-- Lists the most recent dead-lettered tasks of one shard.
-- KEYS[1] dead zset  KEYS[2] data hash  KEYS[3] errors hash  KEYS[4] runs hash   ARGV[1] most to list
-- Returns {id, died at, json, run ('<attempts>:<token>:<runAt>'), last error or false, ...}
local out = {}
local dead = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'REV', 'WITHSCORES')
for i = 1, #dead, 2 do
  out[#out + 1] = dead[i]
  out[#out + 1] = tonumber(dead[i + 1])
  out[#out + 1] = redis.call('HGET', KEYS[2], dead[i]) or ''
  out[#out + 1] = redis.call('HGET', KEYS[4], dead[i]) or '0:0:0'
  out[#out + 1] = redis.call('HGET', KEYS[3], dead[i])
end
return out
