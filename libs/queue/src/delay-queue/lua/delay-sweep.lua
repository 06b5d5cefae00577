-- Cancels the scheduled tasks a sweeping pass of the task source marked and did not list (see
-- delay-sweep-mark), a page of the marks hash at a time. Every mark read is deleted, a pass' own or
-- another's (a pass cut short): an unmarked task is only ever kept, never swept. A task that is running
-- or dead is not in the due index and is left alone, as is a repeat's occurrence.
-- Input:
--   KEYS[1] due zset  KEYS[2] data hash  KEYS[3] runs hash  KEYS[4] errors hash  KEYS[5] repeats hash
--   KEYS[6] marks hash
--   ARGV[1] the pass' mark  ARGV[2] HSCAN cursor  ARGV[3] HSCAN count
-- Output: {next cursor ('0': done), tasks cancelled}
local dueKey, dataKey, runsKey, errorsKey, repeatsKey, marksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local mark = ARGV[1]
local page = redis.call('HSCAN', marksKey, ARGV[2], 'COUNT', ARGV[3])
local fields = page[2]
local swept = 0
for i = 1, #fields, 2 do
  local id = fields[i]
  redis.call('HDEL', marksKey, id)
  if fields[i + 1] == mark and redis.call('HEXISTS', repeatsKey, id) == 0 and redis.call('ZREM', dueKey, id) == 1 then
    redis.call('HDEL', dataKey, id)
    redis.call('HDEL', runsKey, id)
    redis.call('HDEL', errorsKey, id)
    swept = swept + 1
  end
end
return {page[1], swept}
