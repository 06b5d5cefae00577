-- Cancels the scheduled tasks a sweeping pass of the task source marked and did not list (see
-- delay-sweep-mark), a page of the marks hash at a time. Every mark read is deleted, a pass' own or
-- another's (a pass cut short): an unmarked task is only ever kept, never swept. A task that is running
-- or dead is not in the due index and is left alone, as is a repeat's occurrence.
-- Input:
--   KEYS[1] due zset  KEYS[2] data hash  KEYS[3] runs hash  KEYS[4] errors hash  KEYS[5] repeats hash
--   KEYS[6] marks hash  KEYS[7] passes hash (see pass-stamp): a task written since the pass began is kept
--   ARGV[1] the pass' mark  ARGV[2] HSCAN cursor  ARGV[3] HSCAN count  ARGV[4] the pass' id
-- Output: {next cursor ('0': done), tasks cancelled}; an error, sweeping nothing, for a pass whose entry in
--   the passes hash expired.
local dueKey, dataKey, runsKey, errorsKey, repeatsKey, marksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local passesKey = KEYS[7]
--- @include "pass-stamp"
local mark = ARGV[1]
local began = redis.call('HGET', passesKey, 'p:' .. ARGV[4])
if not began then return redis.error_reply('ERR the pass of the task source outlived its lease') end
began = tonumber(began)
local page = redis.call('HSCAN', marksKey, ARGV[2], 'COUNT', ARGV[3])
local fields = page[2]
local swept = 0
for i = 1, #fields, 2 do
  local id = fields[i]
  redis.call('HDEL', marksKey, id)
  if fields[i + 1] == mark and not writtenSince(passesKey, id, began) and redis.call('HEXISTS', repeatsKey, id) == 0
    and redis.call('ZREM', dueKey, id) == 1 then
    redis.call('HDEL', dataKey, id)
    redis.call('HDEL', runsKey, id)
    redis.call('HDEL', errorsKey, id)
    swept = swept + 1
  end
end
return {page[1], swept}
