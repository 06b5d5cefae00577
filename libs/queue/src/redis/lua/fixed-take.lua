-- Takes up to `limit` batches from the listed groups that are still due (another consumer may have
-- taken them since they were listed), discarding messages older than maxAgeMs first, then lists the
-- groups due now for the caller's next call. Listing and claiming share one round trip this way;
-- keys are only ever those the caller declared (Cluster routing).
-- KEYS[1] ready zset   KEYS[2] stats hash   KEYS[3] lens hash   KEYS[3+i] list of candidate group i
-- ARGV[1] batchSize  ARGV[2] maxAgeMs (0: no limit)  ARGV[3] maxWaitMs  ARGV[4] limit
-- ARGV[4+i] name of candidate group i
-- Returns {now, next due time or -1, number of groups listed, group..., then per batch: group, expired, {entry...}}
-- where the next due time is `now` when any group is due; a group whose messages all expired gives a
-- batch with no entry.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local batch, maxAge, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local cutoff = now - maxAge

-- Entries are '[<13-digit ms>,<json>]'.
local function stampOf(entry) return tonumber(string.sub(entry, 2, 14)) end

local batches = {}
local taken = 0
local delivered, expiredTotal, pending = 0, 0, 0
for k = 4, #KEYS do
  if taken >= limit then break end
  local key, group = KEYS[k], ARGV[k + 1]
  local due = redis.call('ZSCORE', KEYS[1], group)
  if due and tonumber(due) <= now then
    local known = tonumber(redis.call('HGET', KEYS[3], group) or '0')
    local len = redis.call('LLEN', key)
    -- The counters knew more than the list holds: the key expired (ttlMs) while it waited.
    local expired = 0
    if known > len then expired = known - len end
    if maxAge > 0 and len > 0 and stampOf(redis.call('LINDEX', key, 0)) < cutoff then
      -- Entries are in time order: binary-search the first one young enough to deliver.
      local lo, hi = 1, len
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if stampOf(redis.call('LINDEX', key, mid)) < cutoff then lo = mid + 1 else hi = mid end
      end
      redis.call('LTRIM', key, lo, -1)
      expired = expired + lo
      len = len - lo
    end
    -- A group holding several batches gives several, while the caller has room for them.
    local first = true
    while len > 0 and taken < limit and (first or len >= batch) do
      local items = redis.call('LRANGE', key, 0, batch - 1)
      redis.call('LTRIM', key, #items, -1)
      len = len - #items
      delivered = delivered + #items
      taken = taken + 1
      batches[#batches + 1] = group
      batches[#batches + 1] = first and expired or 0
      -- The entries as they are: joining them here (table.concat) cost Redis more than the rest of
      -- this script together; the client joins them instead.
      batches[#batches + 1] = items
      first = false
    end
    -- Every message was discarded for age: no batch, but the caller learns how many (no slot used).
    if first and expired > 0 then
      batches[#batches + 1] = group
      batches[#batches + 1] = expired
      batches[#batches + 1] = {}
    end
    if len == 0 then
      redis.call('ZREM', KEYS[1], group)
      redis.call('HDEL', KEYS[3], group)
    else
      redis.call('HSET', KEYS[3], group, len)
      local nextDue = now
      if len < batch then nextDue = stampOf(redis.call('LINDEX', key, 0)) + maxWait end
      redis.call('ZADD', KEYS[1], nextDue, group)
    end
    expiredTotal = expiredTotal + expired
    pending = pending + len - known
  end
end
if pending ~= 0 then redis.call('HINCRBY', KEYS[2], 'pending', pending) end
if delivered > 0 then redis.call('HINCRBY', KEYS[2], 'delivered', delivered) end
if expiredTotal > 0 then redis.call('HINCRBY', KEYS[2], 'expired', expiredTotal) end

-- The head first: an idle shard (the common case when polled) costs one ZRANGE.
local listed = {}
local nextDue = -1
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #head > 0 then
  nextDue = tonumber(head[2])
  if nextDue <= now then
    listed = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
    nextDue = now
  end
end
local out = {now, nextDue, #listed}
for i = 1, #listed do out[#out + 1] = listed[i] end
for i = 1, #batches do out[#out + 1] = batches[i] end
return out
