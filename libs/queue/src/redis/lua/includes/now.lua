-- The server's clock in ms: every process agrees on it, whatever their own clocks say.
local function serverNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
