-- Claims batches of an ordered FixedQueue: at most one batch of a group is out at a time, always the
-- group's oldest messages. A claimed group leaves the ready index and is held (a token and a lease);
-- its acknowledgement (fixed-ack) makes it ready again. At-least-once deliveries leave the messages at
-- the head of the list: the acknowledgement trims exactly what the delivery still owns, so nothing is
-- copied and order comes for free. A group whose lease ran out is ready again at once: at-most-once
-- gives its next messages, at-least-once the same ones again (attempt + 1), or, once `maxAttempts`
-- deliveries were made, buries them (onExhausted 'dead-letter') or pauses the group with them at its
-- head (onExhausted 'pause-group'). With groupRateLimit, a group whose window allows no batch yet is
-- moved in the ready index to when it does (its messages meanwhile grow into a bigger batch).
-- Like fixed-claim-unordered, the caller reads each candidate's first `read` entries (LRANGE in the same MULTI)
-- and this script says which of those it claimed; keys are only those the caller declared.
-- Input:
--   KEYS[1] ready zset  KEYS[2] stats hash  KEYS[3] last-push zset  KEYS[4] held hash  KEYS[5] leases zset
--   KEYS[6] dead zset  KEYS[7] dead records hash  KEYS[8] errors hash  KEYS[9] paused-groups hash
--   KEYS[9+i] list of candidate i, then with groupRateLimit KEYS[9+n+i] its rate list (n candidates)
--   ARGV[1] batchSize  ARGV[2] maxAgeMs (0: none)  ARGV[3] maxWaitMs  ARGV[4] limit  ARGV[5] mode (1 at-most-
--   once, 2 at-least-once)  ARGV[6] leaseMs  ARGV[7] maxAttempts  ARGV[8] dead-letter capacity
--   ARGV[9] token base (random per call)  ARGV[10] onExhausted: '1' pause the group, '0' dead-letter
--   ARGV[11] groupRateLimit's max (0: none)  ARGV[12] its durationMs, then per candidate: name, entries read
--   then, when Redis is full, one argument more: the script reads those entries itself (read-here)
-- Output (a paused queue: nothing claimed, nothing due): {now, next due or -1, groups listed, group..., then per candidate: offset, expired, claimed,
--   attempt, token}: the read entries [offset, offset + claimed) are one batch, delivered under token;
--   attempt -1 (nothing claimed): this call paused the group, its last attempt's lease having run out.
local readyKey, statsKey, lastPushKey, heldKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leasesKey, deadKey, recordsKey, errorsKey, pausedKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
--- @include "now"
local now = serverNow()
local batch, maxAge, maxWait, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local atLeastOnce = ARGV[5] == '2'
local lease, maxAttempts, deadCapacity = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local base, pauseExhaustedGroups = ARGV[9], ARGV[10] == '1'
local rateMax, rateWindow = tonumber(ARGV[11]), tonumber(ARGV[12])
local rated = rateMax > 0
local cutoff = now - maxAge

-- An idle poll (no candidates, nothing due, no lease run out) costs two ZRANGEs, and not even the
-- pause flag: a paused shard would answer the same.
local first = 10
local leaseHead = redis.call('ZRANGE', leasesKey, 0, 0, 'WITHSCORES')
if #KEYS < first and (#leaseHead == 0 or tonumber(leaseHead[2]) > now) then
  local head = redis.call('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
  if #head == 0 or tonumber(head[2]) > now then
    local n = -1
    if #head > 0 then n = tonumber(head[2]) end
    if #leaseHead > 0 and (n < 0 or tonumber(leaseHead[2]) < n) then n = tonumber(leaseHead[2]) end
    return {now, n, 0}
  end
end

-- The candidates' lists, then (rated) as many rate lists.
local last = #KEYS
if rated then last = first + math.floor((#KEYS - first + 1) / 2) - 1 end
--- @include "read-here"
local lists = readHere(first, last, 13)

--- @include "paused"
-- Paused, even lapsed leases wait: their groups become ready on the first claim after resume().
if isPaused(statsKey) then
  local out = {now, -1, 0}
  for _ = first, last do out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = '' end
  return readHereReply(out, lists)
end

--- @include "held"
--- @include "entries"
--- @include "settle"
--- @include "bury"
--- @include "trim-dead-letters"
-- Dead batches forgotten per call beyond capacity (each holds up to a batch of messages).
local DEAD_TRIM_STEP = 100
--- @include "claim-reply"
--- @include "rescore"
--- @include "paused-groups"
--- @include "rate-limit"

-- Leases that ran out first (bounded per call; the rest on the next poll). Their lists are not
-- declared here, so they only become ready: the claim below, with the list in hand, does the rest.
-- Whether this call changed the leases (then their head is read again at the end; an idle poll does not).
local leasesChanged = false
if #leaseHead > 0 and tonumber(leaseHead[2]) <= now then
  leasesChanged = true
  local lapsed = redis.call('ZRANGE', leasesKey, '-inf', now, 'BYSCORE', 'LIMIT', 0, 100)
  for _, group in ipairs(lapsed) do
    redis.call('ZREM', leasesKey, group)
    local token, count, attempts = parseHeld(redis.call('HGET', heldKey, group))
    if atLeastOnce and count > 0 then
      redis.call('HSET', heldKey, group, heldRecord('', count, attempts, 0))
      redis.call('HSET', errorsKey, group, 'lease expired: the consumer stopped or stalled')
    else
      redis.call('HDEL', heldKey, group)
    end
    -- A paused group's batch waits for resumeGroup() instead.
    if not isGroupPaused(pausedKey, group) then redis.call('ZADD', readyKey, now, group) end
  end
end

local claims = {}
local taken = 0
local delivered, expiredTotal, pending, redelivered = 0, 0, 0, 0
local buried = false
local shard = { stats = statsKey, held = heldKey, leases = leasesKey, dead = deadKey, records = recordsKey, errors = errorsKey }
for k = first, last do
  local key, group, read = KEYS[k], ARGV[2 * (k - first) + 13], tonumber(ARGV[2 * (k - first) + 14])
  local rateKey = rated and KEYS[k + last - first + 1]
  local offset, expired, claimed, attempt, token = 0, 0, 0, 0, ''
  local due = redis.call('ZSCORE', readyKey, group)
  if taken < limit and due and tonumber(due) <= now then
    local holder, count, attempts, notBefore = parseHeld(redis.call('HGET', heldKey, group))
    local allowedAt = now
    if rated and holder == '' and notBefore <= now then allowedAt = rateAllowsAt(rateKey, now, rateMax, rateWindow) end
    if holder ~= '' then
      -- Held by a delivery under way: its acknowledgement makes the group ready again.
      redis.call('ZREM', readyKey, group)
    elseif notBefore > now then
      -- A retry waits for its backoff, whatever pushes did to the group's due time since.
      rescore(readyKey, notBefore, group)
    elseif allowedAt > now then
      -- Its rate window allows no batch yet (a push made it due sooner): due once it does.
      rescore(readyKey, allowedAt, group)
    else
      local before
      before, read, expired = trimCandidate(key, read, maxAge, cutoff)
      local len = before - expired
      offset = expired
      -- Expired messages of an unacknowledged delivery are not delivered again.
      count = math.max(0, count - expired)
      if count == 0 then attempts = 0 end
      if offset > read then offset = read end
      local exhausted = atLeastOnce and count > 0 and attempts >= maxAttempts
      -- Its last delivery's lease ran out: the group is paused with the batch at its head.
      local heldBack = exhausted and pauseExhaustedGroups
      if heldBack then
        pauseExhausted(pausedKey, readyKey, group, now)
        -- Told to the caller, which announces it as a failed last attempt's pause is.
        attempt = -1
      elseif exhausted then
        -- Its last delivery's lease ran out: bury it; the group's next batch comes on the next poll.
        len = bury(shard, group, key, count, attempts, base .. '.' .. (k - first + 1), now)
        buried = true
        leasesChanged = true
        count = 0
      elseif taken < limit then
        local available = read - offset
        if count > 0 then
          claimed = math.min(count, available)
          attempt = attempts + 1
        else
          claimed = math.min(batch, available)
          attempt = 1
        end
      end
      if claimed > 0 then
        taken = taken + 1
        token = base .. '.' .. (k - first + 1)
        -- The group leaves the ready index first: a full Redis (maxmemory, noeviction) refuses a
        -- script whose first write may grow memory, and claims must go on there to drain it. An
        -- at-least-once claim grows it by a held record and a lease, which its acknowledgement gives
        -- back with the batch.
        redis.call('ZREM', readyKey, group)
        if atLeastOnce then
          redis.call('HSET', heldKey, group, heldRecord(token, claimed, attempt, 0))
          -- Counted when handed out again, not at the failure or lapse that made it due: a retry may
          -- never come (its messages expire, are cleared, or are buried after the last attempt).
          if attempt > 1 then redelivered = redelivered + claimed end
        else
          redis.call('LTRIM', key, claimed, -1)
          len = len - claimed
          delivered = delivered + claimed
          redis.call('HSET', heldKey, group, heldRecord(token, 0, 1, 0))
        end
        redis.call('ZADD', leasesKey, now + lease, group)
        leasesChanged = true
        if len == 0 then redis.call('ZREM', lastPushKey, group) end
        if rated then rateStart(rateKey, now, rateMax, rateWindow) end
      else
        if count == 0 then
          redis.call('HDEL', heldKey, group)
        else
          redis.call('HSET', heldKey, group, heldRecord('', count, attempts, 0))
        end
        if not heldBack then settle(readyKey, lastPushKey, group, key, len, now, batch, maxWait) end
      end
      expiredTotal = expiredTotal + expired
      pending = pending + len - before
    end
  end
  claims[#claims + 1] = offset
  claims[#claims + 1] = expired
  claims[#claims + 1] = claimed
  claims[#claims + 1] = attempt
  claims[#claims + 1] = token
end
if redelivered > 0 then redis.call('HINCRBY', statsKey, 'redelivered', redelivered) end
if buried then trimDeadLetters(deadKey, deadCapacity, { recordsKey }, DEAD_TRIM_STEP, forgetBuried(shard)) end
local out = claimReply(readyKey, statsKey, now, limit, pending, delivered, expiredTotal)
-- Leases end too: the poller must come back then even when nothing else is due.
if leasesChanged then leaseHead = redis.call('ZRANGE', leasesKey, 0, 0, 'WITHSCORES') end
if #leaseHead > 0 and (out[2] < 0 or tonumber(leaseHead[2]) < out[2]) then out[2] = tonumber(leaseHead[2]) end
for i = 1, #claims do out[#out + 1] = claims[i] end
return readHereReply(out, lists)
