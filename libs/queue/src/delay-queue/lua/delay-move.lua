-- Moves a scheduled task: to an absolute time, a delay from now, or by a delta from its current time.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] passes hash (see pass-stamp)
--   ARGV[1] id  ARGV[2] 'at' | 'in' | 'by'  ARGV[3] ms
--   ARGV[4] trace carrier to store with the task in place of its own (traced queues), or ''
--   Then, for a keyed call, the call-keys section (KEYS[5], ARGV[5...]).
-- Output: {1, runAt, now, is the shard's earliest task} | {0, 'missing' | 'active' | 'dead'}
--   | {0, 'late'}: a late try of its call, which wrote nothing (see the call-keys include)
local dueKey, activeKey, dataKey, passesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--- @include "now"
--- @include "debounce-window"
--- @include "call-keys"
--- @include "pass-stamp"
local now = serverNow()
local id = ARGV[1]
local calls, deadlines, window = {}, {}, nil
if #KEYS > 4 then calls, deadlines, window = callKeys() end
local callRecord = calls[1]
local first = firstAnswer(callRecord)
if first then
  local head = redis.call('ZRANGE', dueKey, 0, 0)
  return {1, tonumber(first), now, head[1] == id and 1 or 0}
end
if callRecord and isLate(deadlines[1], now) then return {0, 'late'} end
local current = redis.call('ZSCORE', dueKey, id)
if not current then
  if redis.call('HEXISTS', dataKey, id) == 0 then return {0, 'missing'} end
  if redis.call('ZSCORE', activeKey, id) then return {0, 'active'} end
  return {0, 'dead'}
end
local ms = tonumber(ARGV[3])
local runAt = ms
if ARGV[2] == 'in' then runAt = now + ms elseif ARGV[2] == 'by' then runAt = tonumber(current) + ms end
if runAt < 0 then runAt = 0 end
redis.call('ZADD', dueKey, 'XX', runAt, id)
if callRecord then remember(callRecord, runAt, window, deadlines[1], now) end
stampWrite(passesKey, id)
if ARGV[4] ~= '' then
  -- A traced payload is '0,"<carrier>",<json>' (see traced-json.ts): one HGET and HSET of one payload.
  -- A debounced task keeps its window.
  local opened, data = debounceWindow(redis.call('HGET', dataKey, id))
  local from = 1
  if string.sub(data, 1, 3) == '0,"' then from = string.find(data, '"', 4, true) + 2 end
  local stored = '0,"' .. ARGV[4] .. '",' .. string.sub(data, from)
  if opened then stored = '1,' .. opened .. ',' .. stored end
  redis.call('HSET', dataKey, id, stored)
end
local head = redis.call('ZRANGE', dueKey, 0, 0)
local isHead = 0
if head[1] == id then isHead = 1 end
return {1, runAt, now, isHead}
