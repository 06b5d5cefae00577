-- Records a queue's kind, shard count and storage layout on first use and refuses a later start with
-- other values: a changed shard count would silently strand every group or task hashed to the old
-- shards, and data in another layout would be misread. An earlier layout that this version reads as it
-- is (ARGV[4]) becomes the current one, so that processes of the earlier version refuse it from then on.
-- A caller that had seen the record (ARGV[5] '1') and finds it gone records the loss with it: the
-- queue's data went with it (FLUSHALL, a restart without persistence, a failover to an empty replica),
-- which health reports until a pass of its task source or an acknowledgement clears `lostAt`. Only the
-- call that creates the record learns it did, so one process across all acts on a loss.
-- Input:
--   KEYS[1] meta hash
--   ARGV[1] kind  ARGV[2] shards  ARGV[3] layout  ARGV[4] earlier layout read as it is (0: none)
--   ARGV[5] '1' when the caller had seen the record, else '0'
--   ARGV[6] '1' when a pass of the queue's task source is owed once the record is created (a DelayQueue:
--   see queue-pass), else '0' (absent from an earlier version's calls)
-- Output: {kind, shards, layout, 1 when this call created the record else 0} as stored; a queue stored
--   before layouts were recorded has layout 1.
--- @include "now"
local metaKey = KEYS[1]
local kind = redis.call('HGET', metaKey, 'kind')
if not kind then
  redis.call('HSET', metaKey, 'kind', ARGV[1], 'shards', ARGV[2], 'layout', ARGV[3])
  local now = serverNow()
  if ARGV[5] == '1' then redis.call('HSET', metaKey, 'lostAt', now) end
  if ARGV[6] == '1' then
    local why = 'record-created'
    if ARGV[5] == '1' then why = 'data-lost' end
    redis.call('HSET', metaKey, 'owed', now .. ':' .. why)
  end
  return {ARGV[1], ARGV[2], ARGV[3], 1}
end
local shards = redis.call('HGET', metaKey, 'shards')
local layout = redis.call('HGET', metaKey, 'layout') or '1'
if kind == ARGV[1] and shards == ARGV[2] and layout == ARGV[4] then
  redis.call('HSET', metaKey, 'layout', ARGV[3])
  layout = ARGV[3]
end
return {kind, shards, layout, 0}
