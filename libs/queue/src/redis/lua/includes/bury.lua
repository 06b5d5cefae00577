-- Moves the first `count` entries of a group's list `key` to the dead letters of an ordered FixedQueue
-- under `id`, with the group's last error, and lets the group go (no delivery holds it any more).
-- `shard` names the keys it writes: stats, held, leases, dead (zset), records (hash), errors (hash).
-- The caller trims the dead letters to capacity (trim-dead-letters) and counts what left `pending`.
-- Returns the list's new length.
local function bury(shard, group, key, count, attempts, id, now)
  local entries = redis.call('LRANGE', key, 0, count - 1)
  redis.call('LTRIM', key, count, -1)
  -- A JSON header, then the entries as stored, one a line (JSON text never holds a raw newline):
  -- cheaper to write and to split again than entries encoded as JSON strings.
  local header = cjson.encode({
    group = group, attempts = attempts, diedAt = now, error = redis.call('HGET', shard.errors, group) or '',
  })
  redis.call('ZADD', shard.dead, now, id)
  redis.call('HSET', shard.records, id, header .. '\n' .. table.concat(entries, '\n'))
  redis.call('HDEL', shard.held, group)
  redis.call('HDEL', shard.errors, group)
  redis.call('ZREM', shard.leases, group)
  redis.call('HINCRBY', shard.stats, 'dead', #entries)
  return redis.call('LLEN', key)
end
