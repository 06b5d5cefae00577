-- A process says it is alive, with the library version and the data contract it speaks, and reads who
-- else is: one hash per prefix, one field per process, stamped with Redis' clock. A field not stamped
-- again within the lease is a process gone (killed, or cut off), deleted here by whoever announces next,
-- so the hash holds the live processes and a few ghosts for at most one lease. A leaving process
-- deletes its own field (ARGV[3] '1').
-- Input:
--   KEYS[1] processes hash
--   ARGV[1] process id  ARGV[2] 'version|contract|lowest contract it works beside|started at'
--   ARGV[3] '1' when it leaves, else '0'  ARGV[4] lease in ms
-- Output: {now, id, value, id, value, ...}: Redis' time and the live processes (the caller among them),
--   each value ARGV[2]'s form followed by '|' and the time it was last stamped.
--- @include "now"
local processesKey, lease = KEYS[1], tonumber(ARGV[4])
local now = serverNow()
if ARGV[3] == '1' then
  redis.call('HDEL', processesKey, ARGV[1])
  return {now}
end
redis.call('HSET', processesKey, ARGV[1], ARGV[2] .. '|' .. now)
local all = redis.call('HGETALL', processesKey)
local out, gone = {now}, {}
for i = 1, #all, 2 do
  local seen = tonumber(string.match(all[i + 1], '|(%d+)$'))
  if seen and seen + lease >= now then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  else
    gone[#gone + 1] = all[i]
  end
end
if #gone > 0 then redis.call('HDEL', processesKey, unpack(gone)) end
return out
