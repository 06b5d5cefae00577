-- Takes one batch from each listed group that is still due (another consumer may have taken it
-- since it was listed), discarding messages older than maxAgeMs first.
-- KEYS[1] ready zset   KEYS[2] stats hash   KEYS[3] lens hash   KEYS[3+i] list of group i
-- ARGV[1] batchSize  ARGV[2] maxAgeMs (0: no limit)  ARGV[3] maxWaitMs  ARGV[3+i] name of group i
-- Returns {now, group, expired, '[[t,msg],...]', group, expired, batch, ...} for groups that held messages.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local batch, maxAge, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cutoff = now - maxAge

-- Entries are '[<13-digit ms>,<json>]'.
local function stampOf(entry) return tonumber(string.sub(entry, 2, 14)) end

local out = {now}
local delivered, expiredTotal, pending = 0, 0, 0
for k = 4, #KEYS do
  local key, group = KEYS[k], ARGV[k]
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
    local items = {}
    if len > 0 then
      items = redis.call('LRANGE', key, 0, batch - 1)
      redis.call('LTRIM', key, #items, -1)
      len = len - #items
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
    delivered = delivered + #items
    expiredTotal = expiredTotal + expired
    pending = pending + len - known
    if #items > 0 or expired > 0 then
      out[#out + 1] = group
      out[#out + 1] = expired
      out[#out + 1] = '[' .. table.concat(items, ',') .. ']'
    end
  end
end
if pending ~= 0 then redis.call('HINCRBY', KEYS[2], 'pending', pending) end
if delivered > 0 then redis.call('HINCRBY', KEYS[2], 'delivered', delivered) end
if expiredTotal > 0 then redis.call('HINCRBY', KEYS[2], 'expired', expiredTotal) end
return out
