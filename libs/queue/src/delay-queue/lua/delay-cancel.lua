-- Deletes a task in whatever state it is.
-- Input:
--   KEYS[1] due zset  KEYS[2] active zset  KEYS[3] data hash  KEYS[4] dead zset  KEYS[5] errors hash
--   KEYS[6] runs hash  KEYS[7] repeats hash (a cancelled repeat stops too)  KEYS[8] successors hash
--   KEYS[9] passes hash (see pass-stamp)
--   ARGV[1] id
--   Then, for a keyed call, the call-keys section (KEYS[10], ARGV[2...]).
-- Output: 1 when it existed, else 0.
local dueKey, activeKey, dataKey, deadKey, errorsKey, runsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local repeatsKey, successorsKey, passesKey = KEYS[7], KEYS[8], KEYS[9]
--- @include "call-keys"
--- @include "pass-stamp"
local id = ARGV[1]
local calls, window = {}, nil
if #KEYS > 9 then calls, window = callKeys() end
local callRecord = calls[1]
if firstAnswer(callRecord) then return 1 end
-- Stamped even when nothing was there: a pass that listed it must not write it back.
stampWrite(passesKey, id)
if redis.call('HDEL', dataKey, id) == 0 then return 0 end
if callRecord then remember(callRecord, 1, window) end
redis.call('ZREM', dueKey, id)
redis.call('ZREM', activeKey, id)
redis.call('ZREM', deadKey, id)
redis.call('HDEL', errorsKey, id)
redis.call('HDEL', runsKey, id)
redis.call('HDEL', repeatsKey, id)
redis.call('HDEL', successorsKey, id)
return 1
