-- A repeat as its hash holds it: '<occurrence>|<last run at>|<last outcome>|<last success at>|<schedule>'
-- (the middle three empty before a first run). Returns occurrence, lastRunAt, lastOutcome, lastSuccessAt,
-- schedule text; nothing for nil.
local function readRepeat(entry)
  if not entry then return nil end
  local occurrence, lastRunAt, lastOutcome, lastSuccessAt, schedule =
    string.match(entry, '^(%-?%d+)|(%d*)|(%a*)|(%d*)|(.*)$')
  return tonumber(occurrence), lastRunAt, lastOutcome, lastSuccessAt, schedule
end

local function writeRepeat(repeatsKey, id, occurrence, lastRunAt, lastOutcome, lastSuccessAt, schedule)
  redis.call('HSET', repeatsKey, id,
    occurrence .. '|' .. lastRunAt .. '|' .. lastOutcome .. '|' .. lastSuccessAt .. '|' .. schedule)
end
