-- A FixedQueue list's entries are '[<13-digit ms>,<json>]': the push time leads.
local function stampOf(entry) return tonumber(string.sub(entry, 2, 14)) end

-- Trims a list's entries pushed before `cutoff` (entries are in time order: a binary search finds the
-- first young enough). Returns how many went.
local function trimOlderThan(key, len, cutoff)
  if len == 0 or stampOf(redis.call('LINDEX', key, 0)) >= cutoff then return 0 end
  local lo, hi = 1, len
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if stampOf(redis.call('LINDEX', key, mid)) < cutoff then lo = mid + 1 else hi = mid end
  end
  redis.call('LTRIM', key, lo, -1)
  return lo
end

-- A claim's candidate: its list's length, and how many of its oldest entries went for being older than
-- `cutoff` (when maxAge > 0). Those are the first entries the caller read, whose read is clamped to
-- the list. Returns length before the trim, clamped read, entries trimmed.
local function trimCandidate(key, read, maxAge, cutoff)
  local len = redis.call('LLEN', key)
  if read > len then read = len end
  local expired = 0
  if maxAge > 0 then expired = trimOlderThan(key, len, cutoff) end
  return len, read, expired
end
