-- Records a queue's kind, shard count and storage layout on first use and refuses a later start with
-- other values: a changed shard count would silently strand every group or task hashed to the old
-- shards, and data in another layout would be misread. An earlier layout that this version reads as it
-- is (ARGV[4]) becomes the current one, so that processes of the earlier version refuse it from then on.
-- Input:
--   KEYS[1] meta hash
--   ARGV[1] kind  ARGV[2] shards  ARGV[3] layout  ARGV[4] earlier layout read as it is (0: none)
-- Output: {kind, shards, layout} as stored; a queue stored before layouts were recorded has layout 1.
local metaKey = KEYS[1]
local kind = redis.call('HGET', metaKey, 'kind')
if not kind then
  redis.call('HSET', metaKey, 'kind', ARGV[1], 'shards', ARGV[2], 'layout', ARGV[3])
  return {ARGV[1], ARGV[2], ARGV[3]}
end
local shards = redis.call('HGET', metaKey, 'shards')
local layout = redis.call('HGET', metaKey, 'layout') or '1'
if kind == ARGV[1] and shards == ARGV[2] and layout == ARGV[4] then
  redis.call('HSET', metaKey, 'layout', ARGV[3])
  layout = ARGV[3]
end
return {kind, shards, layout}
