-- Marks a page of a shard's scheduled tasks as candidates of a sweeping pass of the task source: the
-- pass unmarks each task it lists, and delay-sweep cancels what is still marked once it has listed all.
-- Tasks scheduled after their page was marked carry no mark and are never swept by this pass; a repeat's
-- occurrence (no row of any source) is never marked.
-- Input:
--   KEYS[1] due zset  KEYS[2] repeats hash  KEYS[3] marks hash (id -> the pass that marked it)
--   ARGV[1] the pass' mark  ARGV[2] first rank  ARGV[3] how many
-- Output: how many ranks were read (fewer than ARGV[3]: the end of the index).
local dueKey, repeatsKey, marksKey = KEYS[1], KEYS[2], KEYS[3]
local mark, first = ARGV[1], tonumber(ARGV[2])
local ids = redis.call('ZRANGE', dueKey, first, first + tonumber(ARGV[3]) - 1)
for _, id in ipairs(ids) do
  if redis.call('HEXISTS', repeatsKey, id) == 0 then redis.call('HSET', marksKey, id, mark) end
end
return #ids
