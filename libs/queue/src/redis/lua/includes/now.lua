-- The server's clock in ms: every process agrees on it, whatever their own clocks say.
local serverTime = redis.call('TIME')
local now = tonumber(serverTime[1]) * 1000 + math.floor(tonumber(serverTime[2]) / 1000)
