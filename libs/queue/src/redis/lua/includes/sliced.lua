-- Runs `command key ...list` in slices of 1,000 values and joins the replies: Redis' Lua unpacks a
-- few thousand values at most (an even slice, so that field/value pairs stay together).
local function sliced(command, key, list)
  local replies = {}
  for i = 1, #list, 1000 do
    local reply = redis.call(command, key, unpack(list, i, math.min(i + 999, #list)))
    if type(reply) == 'table' then for j = 1, #reply do replies[#replies + 1] = reply[j] end end
  end
  return replies
end
