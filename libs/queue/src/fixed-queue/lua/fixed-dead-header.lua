-- The header of a dead batch (its group, attempts, death time and last error), without its messages:
-- what re-queueing it needs to know first, to declare the group's list as a key.
-- Input:
--   KEYS[1] dead records hash
--   ARGV[1] id
-- Output: the header JSON, or false when there is no such dead batch
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
return string.sub(record, 1, (string.find(record, '\n', 1, true) or (#record + 1)) - 1)
