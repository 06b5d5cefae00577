-- A call that may reach Redis more than once (retryMs, an idempotencyKey) carries a call key per item:
-- the try that Redis runs first records the item's result in a key of the shard that expires with the
-- call's window, and a later try finds it there, answers that result and writes nothing. A try that
-- wrote nothing (a task kept, not found, running) records nothing: running it again changes nothing.
-- The call keys come last, so that a call carrying none is sent as before: KEYS end with one record key
-- per keyed item; ARGV end with each keyed item's position among the call's items, the window in ms,
-- and how many keyed items there are.
-- Returns: position -> record key, the window, and how many keyed items (ARGV and KEYS to leave out).
local function callKeys()
  local count = tonumber(ARGV[#ARGV])
  local records = {}
  for j = 1, count do records[tonumber(ARGV[#ARGV - 2 - count + j])] = KEYS[#KEYS - count + j] end
  return records, ARGV[#ARGV - 1], count
end

-- What the try Redis ran first answered for this record, or nil.
local function firstAnswer(record)
  if not record then return nil end
  return redis.call('HGET', record, 'r') or nil
end

-- Written after the item's own writes: a full Redis judges a script by its first write (see the memory
-- rules in docs/guarantees.md), so a keyed cancel, whose first write frees memory, still runs there.
local function remember(record, answer, windowMs)
  redis.call('HSET', record, 'r', answer)
  redis.call('PEXPIRE', record, windowMs)
end
