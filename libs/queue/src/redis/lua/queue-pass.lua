-- A pass of a DelayQueue's task source owed across processes, in the queue's meta hash (beside its
-- record, see queue-meta): `owed` ('<server ms>:<why>') is recorded by the call that creates the record
-- and by a write that gave up; `sourceUntil` (server ms) says until when some live process has a task
-- source for the queue; `passLease` ('<token>:<server ms>') is held by the one process running the owed
-- pass, and taken over once it runs out (its process died); `owedIds` (a JSON array) names the tasks
-- whose write gave up, which the owed pass writes as the source says whatever Redis holds (see
-- task-reconciler). Fields an earlier version ignores.
-- Input:
--   KEYS[1] meta hash
--   ARGV[1] 'alive' | 'owe' | 'take' | 'renew' | 'done'
--   'alive': ARGV[2] ms a process with a source stays live without another 'alive'
--   'owe':   ARGV[2] why ('write-failed')  ARGV[3] ids of the tasks whose write gave up (a JSON array), or ''
--   'take':  ARGV[2] lease token  ARGV[3] lease ms
--   'renew': ARGV[2] lease token  ARGV[3] lease ms
--   'done':  ARGV[2] lease token or ''  ARGV[3] `owed` when the pass began, or ''
--            ARGV[4] `lostAt` when the pass began, or ''  ARGV[5] the pass (JSON)
--            ARGV[6] the length of `owedIds` when the pass began (0: none): ids added since stay
-- Output: 'alive': `owed` or ''; 'owe': 1, or 0 when the record is missing (its re-creation owes one);
--   'take': `owed` when this call took the lease, else ''; 'renew': 1 while the lease is the caller's,
--   else 0; 'done': 1.
--- @include "now"
local metaKey, op = KEYS[1], ARGV[1]
local now = serverNow()
-- Only beside a record: a write to a lost queue's meta hash would make a partial record.
if op ~= 'done' and redis.call('HEXISTS', metaKey, 'kind') == 0 then
  if op == 'owe' or op == 'renew' then return 0 end
  return ''
end
local function leaseOf()
  local lease = redis.call('HGET', metaKey, 'passLease')
  if not lease then return nil, 0 end
  local token, untilMs = string.match(lease, '^(.*):(%d+)$')
  return token, tonumber(untilMs)
end
if op == 'alive' then
  local untilMs = now + tonumber(ARGV[2])
  if untilMs > tonumber(redis.call('HGET', metaKey, 'sourceUntil') or '0') then
    redis.call('HSET', metaKey, 'sourceUntil', untilMs)
  end
  return redis.call('HGET', metaKey, 'owed') or ''
end
-- Bytes of ids kept at most (a few ten thousand ids): past them a write that gave up is compensated as a
-- missing task only.
local MAX_OWED_IDS_BYTES = 1048576
if op == 'owe' then
  redis.call('HSET', metaKey, 'owed', now .. ':' .. ARGV[2])
  if ARGV[3] ~= '' then
    local ids = redis.call('HGET', metaKey, 'owedIds')
    if not ids then
      redis.call('HSET', metaKey, 'owedIds', ARGV[3])
    elseif #ids + #ARGV[3] <= MAX_OWED_IDS_BYTES then
      -- Two JSON arrays of strings joined into one.
      redis.call('HSET', metaKey, 'owedIds', string.sub(ids, 1, -2) .. ',' .. string.sub(ARGV[3], 2))
    end
  end
  return 1
end
if op == 'take' then
  local owed = redis.call('HGET', metaKey, 'owed')
  if not owed then return '' end
  local token, untilMs = leaseOf()
  if token and token ~= ARGV[2] and untilMs > now then return '' end
  redis.call('HSET', metaKey, 'passLease', ARGV[2] .. ':' .. (now + tonumber(ARGV[3])))
  return owed
end
if op == 'renew' then
  if leaseOf() ~= ARGV[2] then return 0 end
  redis.call('HSET', metaKey, 'passLease', ARGV[2] .. ':' .. (now + tonumber(ARGV[3])))
  return 1
end
-- 'done': what was owed or lost when the pass began is settled; what was recorded since is newer
-- than what it read, and stays.
redis.call('HSET', metaKey, 'reconciled', ARGV[5])
if ARGV[3] ~= '' and redis.call('HGET', metaKey, 'owed') == ARGV[3] then
  redis.call('HDEL', metaKey, 'owed')
  if #(redis.call('HGET', metaKey, 'owedIds') or '') == tonumber(ARGV[6]) then redis.call('HDEL', metaKey, 'owedIds') end
end
if ARGV[4] ~= '' and redis.call('HGET', metaKey, 'lostAt') == ARGV[4] then redis.call('HDEL', metaKey, 'lostAt') end
if ARGV[2] ~= '' and leaseOf() == ARGV[2] then redis.call('HDEL', metaKey, 'passLease') end
return 1
