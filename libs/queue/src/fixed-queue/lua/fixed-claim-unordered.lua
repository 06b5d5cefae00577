-- Claims batches of an unordered FixedQueue (`ordered: false`): up to `limit` batches, several of a
-- group if it has them, from the listed groups that are still due (another consumer may have taken
-- them since they were listed), discarding messages older than maxAgeMs first, then lists the groups
-- due now for the caller's next call. Listing and claiming share one round trip this way;
-- keys are only ever those the caller declared (Cluster routing).
-- The messages themselves are not read here: the caller sends this script in one MULTI after an
-- LRANGE of each candidate's first `read` entries, so it sees the lists exactly as the script does,
-- and the script says which of those entries it claimed: moving the entries through Lua would cost
-- Redis more than the LRANGE does.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[3+i] list of candidate group i,
--   then with groupRateLimit KEYS[3+n+i] its rate list (n candidates)
--   ARGV[1] batchSize  ARGV[2] maxAgeMs (0: no limit)  ARGV[3] maxWaitMs  ARGV[4] limit
--   ARGV[5] groupRateLimit's max (0: none)  ARGV[6] its durationMs
--   ARGV[5+2i] name of candidate group i, ARGV[6+2i] how many of its first entries the caller read
--   then, when Redis is full, one argument more: the script reads those entries itself (read-here)
-- Output (a paused queue: nothing claimed, nothing due): {now, next due time or -1, number of groups listed, group..., then per candidate: offset,
-- expired, claimed}: the caller's read entries [offset, offset + claimed) are claimed, in batches of
-- batchSize (only the first may be short). The next due time is `now` when any group is due.
local readyKey, statsKey, lastPushKey = KEYS[1], KEYS[2], KEYS[3]
--- @include "now"
local now = serverNow()
local batch, maxAge, maxWait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local rateMax, rateWindow = tonumber(ARGV[5]), tonumber(ARGV[6])
local rated = rateMax > 0
local cutoff = now - maxAge

-- An idle poll (no candidates, nothing due) costs one ZRANGE, and not even the pause flag: a paused
-- shard would answer the same.
if #KEYS < 4 then
  local head = redis.call('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
  if #head == 0 then return {now, -1, 0} end
  if tonumber(head[2]) > now then return {now, tonumber(head[2]), 0} end
end

-- The candidates' lists, then (rated) as many rate lists.
local last = #KEYS
if rated then last = 4 + math.floor((#KEYS - 3) / 2) - 1 end
--- @include "read-here"
local lists = readHere(4, last, 7)

--- @include "paused"
if isPaused(statsKey) then
  local out = {now, -1, 0}
  for _ = 4, last do out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0 end
  return readHereReply(out, lists)
end

--- @include "entries"
--- @include "settle"
--- @include "claim-reply"
--- @include "rescore"
--- @include "rate-limit"

local claims = {}
local taken = 0
local delivered, expiredTotal, pending = 0, 0, 0
for k = 4, last do
  local key, group, read = KEYS[k], ARGV[2 * k - 1], tonumber(ARGV[2 * k])
  local rateKey = rated and KEYS[k + last - 3]
  local offset, expired, claimed = 0, 0, 0
  local due = redis.call('ZSCORE', readyKey, group)
  local allowedAt = now
  if rated and due and tonumber(due) <= now then allowedAt = rateAllowsAt(rateKey, now, rateMax, rateWindow) end
  if allowedAt > now then
    -- Its rate window allows no batch yet (a push made it due sooner): due once it does.
    rescore(readyKey, allowedAt, group)
  elseif taken < limit and due and tonumber(due) <= now then
    local before
    before, read, expired = trimCandidate(key, read, maxAge, cutoff)
    local len = before - expired
    offset = expired
    -- A group holding several batches gives several, while the caller has room for them (one a call
    -- under groupRateLimit: its window is looked at again on the next).
    local available = read - offset
    local first = true
    while available - claimed > 0 and taken < limit and (first or (available - claimed >= batch and not rated)) do
      claimed = claimed + math.min(batch, available - claimed)
      taken = taken + 1
      first = false
    end
    if claimed > 0 then redis.call('LTRIM', key, claimed, -1) end
    if offset > read then offset = read end
    len = len - claimed
    delivered = delivered + claimed
    local settled = settle(readyKey, lastPushKey, group, key, len, now, batch, maxWait)
    if rated and claimed > 0 then
      rateStart(rateKey, now, rateMax, rateWindow)
      rateSettled(readyKey, rateKey, group, settled, now, rateMax, rateWindow)
    end
    expiredTotal = expiredTotal + expired
    pending = pending + len - before
  end
  claims[#claims + 1] = offset
  claims[#claims + 1] = expired
  claims[#claims + 1] = claimed
end
local out = claimReply(readyKey, statsKey, now, limit, pending, delivered, expiredTotal)
for i = 1, #claims do out[#out + 1] = claims[i] end
return readHereReply(out, lists)
