-- held: group -> '<token>:<count>:<attempts>:<not before>' for ordered FixedQueues. The token is empty
-- while no delivery runs (a retry waits); count is how many head entries an at-least-once delivery owns.
local function parseHeld(record)
  if not record then return '', 0, 0, 0 end
  local token, count, attempts, notBefore = string.match(record, '^([^:]*):(%d+):(%d+):(%d+)$')
  return token, tonumber(count), tonumber(attempts), tonumber(notBefore)
end

local function heldRecord(token, count, attempts, notBefore)
  return token .. ':' .. count .. ':' .. attempts .. ':' .. notBefore
end

-- Whether `token` is the running delivery holding `group`.
local function holds(heldKey, group, token)
  local holder = parseHeld(redis.call('HGET', heldKey, group))
  return holder ~= '' and holder == token
end
