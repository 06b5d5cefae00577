--- @include "settle"
--- @include "held"
-- Helpers of the ordered FixedQueue scripts: a group buried. It uses the including script's locals:
-- now, statsKey, heldKey, leasesKey, deadKey, recordsKey, errorsKey, deadCapacity (and settle's).

-- Moves a group's first `count` entries to the dead letters under `id`, with the last error, and
-- trims the oldest dead letters beyond capacity (at most 100 a call: a lowered capacity is reached
-- over the next calls rather than in one long script). Returns the list's new length; the caller
-- counts what left `pending`.
local function bury(group, key, count, attempts, id)
  local entries = redis.call('LRANGE', key, 0, count - 1)
  redis.call('LTRIM', key, count, -1)
  -- A JSON header, then the entries as stored, one a line (JSON text never holds a raw newline):
  -- cheaper to write and to split again than entries encoded as JSON strings.
  local header = cjson.encode({
    group = group, attempts = attempts, diedAt = now, error = redis.call('HGET', errorsKey, group) or '',
  })
  local record = header .. '\n' .. table.concat(entries, '\n')
  redis.call('ZADD', deadKey, now, id)
  redis.call('HSET', recordsKey, id, record)
  redis.call('HDEL', heldKey, group)
  redis.call('HDEL', errorsKey, group)
  redis.call('ZREM', leasesKey, group)
  redis.call('HINCRBY', statsKey, 'dead', #entries)
  local over = redis.call('ZCARD', deadKey) - deadCapacity
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', deadKey, math.min(over, 100))
    for i = 1, #oldest, 2 do redis.call('HDEL', recordsKey, oldest[i]) end
  end
  return redis.call('LLEN', key)
end
