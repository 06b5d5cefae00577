-- A repeat as its hash holds it: '<occurrence>|<last run at>|<last outcome>|<schedule>' (the last two
-- empty before a first run). Returns occurrence, lastRunAt, lastOutcome, schedule text; nothing for nil.
local function readRepeat(entry)
  if not entry then return nil end
  local occurrence, lastRunAt, lastOutcome, schedule = string.match(entry, '^(%-?%d+)|(%d*)|(%a*)|(.*)$')
  return tonumber(occurrence), lastRunAt, lastOutcome, schedule
end

local function writeRepeat(repeatsKey, id, occurrence, lastRunAt, lastOutcome, schedule)
  redis.call('HSET', repeatsKey, id, occurrence .. '|' .. lastRunAt .. '|' .. lastOutcome .. '|' .. schedule)
end
