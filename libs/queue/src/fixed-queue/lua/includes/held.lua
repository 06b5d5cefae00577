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

-- Capacity evicted the `evicted` oldest entries of a group: an at-least-once delivery owns fewer of
-- them, and a retry left owning none has nothing to retry. Returns whether the group is still held.
local function evictHeld(heldKey, group, record, evicted)
  local holder, count, attempts, notBefore = parseHeld(record)
  if count == 0 then return true end
  count = math.max(0, count - evicted)
  if count == 0 and holder == '' then
    redis.call('HDEL', heldKey, group)
    return false
  end
  redis.call('HSET', heldKey, group, heldRecord(holder, count, attempts, notBefore))
  return true
end
