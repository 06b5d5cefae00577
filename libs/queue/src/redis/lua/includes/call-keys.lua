-- A call that may reach Redis more than once (retryMs, an idempotencyKey) carries a call key per item:
-- the try that Redis runs first records the item's result in a key of the shard that expires with the
-- call's window, and a later try finds it there, answers that result and writes nothing. A try that
-- wrote nothing (a task kept, not found, running) records nothing: running it again changes nothing.
-- A retried call's items also carry its deadline, in Redis' time: when the call began, as the process
-- estimates Redis' clock, plus the window. The record lasts until then at least, so a try that finds no
-- record after the deadline cannot tell whether an earlier one was applied: it is late, and writes
-- nothing (`isLate`). Without it, a try held on its way past the window (or a clock that jumped) would be
-- applied a second time. 0: no deadline (an application's idempotency key names calls of any time).
-- The call keys come last, so that a call carrying none is sent as before: KEYS end with one record key
-- per keyed item; ARGV end with each keyed item's position among the call's items, then each one's
-- deadline, the window in ms, and how many keyed items there are.
-- Returns: position -> record key, position -> deadline, the window, how many keyed items (KEYS to leave
-- out), and how many ARGV the section takes.
local function callKeys()
  local count = tonumber(ARGV[#ARGV])
  local from = #ARGV - 2 - 2 * count
  local records, deadlines = {}, {}
  for j = 1, count do
    local position = tonumber(ARGV[from + j])
    records[position] = KEYS[#KEYS - count + j]
    deadlines[position] = tonumber(ARGV[from + count + j])
  end
  return records, deadlines, tonumber(ARGV[#ARGV - 1]), count, 2 * count + 2
end

-- What the try Redis ran first answered for this record, or nil.
local function firstAnswer(record)
  if not record then return nil end
  return redis.call('HGET', record, 'r') or nil
end

-- Whether a try that found no record of its call came after the call's deadline.
local function isLate(deadline, now)
  return deadline ~= nil and deadline > 0 and now > deadline
end

-- Written after the item's own writes: a full Redis judges a script by its first write (see the memory
-- rules in docs/guarantees.md), so a keyed cancel, whose first write frees memory, still runs there.
-- Kept for the window, and at least until the deadline: a process whose estimate of Redis' clock ran
-- ahead sent a later one, and every try up to it must find the record.
local function remember(record, answer, windowMs, deadline, now)
  redis.call('HSET', record, 'r', answer)
  local keep = windowMs
  if deadline ~= nil and deadline > 0 then keep = math.max(keep, math.ceil(deadline - now)) end
  redis.call('PEXPIRE', record, keep)
end
