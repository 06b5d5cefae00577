-- Records a queue's kind and shard count on first use and refuses a later start with other values:
-- a changed shard count would silently strand every group or task hashed to the old shards.
-- KEYS[1] meta hash   ARGV[1] kind   ARGV[2] shards
-- Returns {kind, shards} as stored.
local kind = redis.call('HGET', KEYS[1], 'kind')
if not kind then
  redis.call('HSET', KEYS[1], 'kind', ARGV[1], 'shards', ARGV[2])
  return {ARGV[1], ARGV[2]}
end
return {kind, redis.call('HGET', KEYS[1], 'shards')}
