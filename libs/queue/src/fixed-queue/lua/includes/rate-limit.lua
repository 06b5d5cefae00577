-- groupRateLimit (FixedQueue): the start times of a group's latest batches, oldest first, in a list of
-- its own (`rate:<group>`, at most `max` entries) that expires `window` ms after its newest start, so
-- that no group leaves anything behind. Fewer than `max` entries, or the oldest of them out of the
-- window, and the group may start a batch: at most `max` start in any `window` ms, across every process.

-- When the group may start its next batch: now, or once the oldest of its last `max` starts leaves the window.
local function rateAllowsAt(key, now, max, window)
  if redis.call('LLEN', key) < max then return now end
  return math.max(now, tonumber(redis.call('LINDEX', key, 0)) + window)
end

-- Records a batch start at `now`.
local function rateStart(key, now, max, window)
  if redis.call('RPUSH', key, now) > max then redis.call('LTRIM', key, -max, -1) end
  redis.call('PEXPIRE', key, window)
end

-- A group settled at `due` (-1: not ready) waits for its window too: its ready entry says when it allows
-- a batch, so claims meet it no sooner. Returns the due time.
local function rateSettled(readyKey, key, group, due, now, max, window)
  if due < 0 then return due end
  local at = rateAllowsAt(key, now, max, window)
  if at <= due then return due end
  redis.call('ZADD', readyKey, at, group)
  return at
end
