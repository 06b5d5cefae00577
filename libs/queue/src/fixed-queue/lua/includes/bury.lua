-- Moves the first `count` entries of a group's list `key` to the dead letters of an ordered FixedQueue
-- under `id`, with the group's last error, and lets the group go (no delivery holds it any more).
-- `shard` names the keys it writes: stats, held, leases, dead (zset), records (hash), errors (hash).
-- The caller trims the dead letters to capacity (trim-dead-letters, forgetting with `forgetBuried`) and
-- counts what left `pending`. Stats: `dead` counts messages ever buried, `deadNow` those buried now.
-- Returns the list's new length.
local function bury(shard, group, key, count, attempts, id, now)
  local entries = redis.call('LRANGE', key, 0, count - 1)
  redis.call('LTRIM', key, count, -1)
  -- A JSON header, then the entries as stored, one a line (JSON text never holds a raw newline):
  -- cheaper to write and to split again than entries encoded as JSON strings.
  local header = cjson.encode({
    group = group, attempts = attempts, diedAt = now, error = redis.call('HGET', shard.errors, group) or '',
    messages = #entries,
  })
  redis.call('ZADD', shard.dead, now, id)
  redis.call('HSET', shard.records, id, header .. '\n' .. table.concat(entries, '\n'))
  redis.call('HDEL', shard.held, group)
  redis.call('HDEL', shard.errors, group)
  redis.call('ZREM', shard.leases, group)
  redis.call('HINCRBY', shard.stats, 'dead', #entries)
  redis.call('HINCRBY', shard.stats, 'deadNow', #entries)
  return redis.call('LLEN', key)
end

-- What trimDeadLetters calls with the ids of dead batches it is about to forget: their messages leave `deadNow`.
local function forgetBuried(shard)
  return function(ids)
    local gone = 0
    for _, id in ipairs(ids) do
      local record = redis.call('HGET', shard.records, id)
      if record then
        gone = gone + (cjson.decode(string.sub(record, 1, string.find(record, '\n', 1, true) - 1)).messages or 0)
      end
    end
    if gone > 0 then redis.call('HINCRBY', shard.stats, 'deadNow', -gone) end
  end
end
