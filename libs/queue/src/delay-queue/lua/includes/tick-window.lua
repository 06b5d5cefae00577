-- The ticks a client computed around its estimate of Redis' clock (see RepeatSchedule.window), read
-- from args[first..]: lower bound, latest tick at or before it (-1: none), complete '1' | '0', ticks.
-- Returns false when they do not cover `now` (the client's estimate was off: it asks again with `now`),
-- else true, the latest tick at or before now (or nil) and the first after it (or nil: the schedule ended).
local function pickTicks(now, args, first)
  local lowerBound, prev, complete = tonumber(args[first]), tonumber(args[first + 1]), args[first + 2] == '1'
  if now < lowerBound then return false end
  local latest, nextTick
  if prev >= 0 then latest = prev end
  for i = first + 3, #args do
    local tick = tonumber(args[i])
    if tick <= now then
      latest = tick
    else
      nextTick = tick
      break
    end
  end
  if not nextTick and not complete then return false end
  return true, latest, nextTick
end
