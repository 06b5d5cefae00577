-- Deletes a task in whatever state it is.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] repeats hash (a cancelled repeat stops too)  KEYS[8] successors hash
--   KEYS[9] passes hash (see pass-stamp)
--   ARGV[1] id
--   Then, for a keyed call, the call-keys section (KEYS[10], ARGV[2...]).
-- Output: 1 when it existed, else 0; -1 for a late try of its call, which wrote nothing (see the
--   call-keys include).
local dueKey, activeKey, dataKey, deadKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local repeatsKey, successorsKey, passesKey = KEYS[7], KEYS[8], KEYS[9]
--- @include "now"
--- @include "call-keys"
--- @include "pass-stamp"
local id = ARGV[1]
local calls, deadlines, window = {}, {}, nil
if #KEYS > 9 then calls, deadlines, window = callKeys() end
local callRecord = calls[1]
if firstAnswer(callRecord) then return 1 end
-- The clock is read only for a call with a deadline: most cancels have none.
local now = 0
if deadlines[1] ~= nil and deadlines[1] > 0 then now = serverNow() end
if callRecord and isLate(deadlines[1], now) then return -1 end
-- Stamped even when nothing was there: a pass that listed it must not write it back.
stampWrite(passesKey, id)
if redis.call('HDEL', dataKey, id) == 0 then return 0 end
if callRecord then remember(callRecord, 1, window, deadlines[1], now) end
redis.call('ZREM', dueKey, id)
redis.call('ZREM', activeKey, id)
redis.call('ZREM', deadKey, id)
redis.call('HDEL', errorsKey, id)
redis.call('HDEL', runsKey, id)
redis.call('HDEL', repeatsKey, id)
redis.call('HDEL', successorsKey, id)
return 1
