-- passes hash of a shard (see delay-pass): while a pass of the task source runs there, each write of a
-- task records the shard's write sequence number at `w:<id>`, so that a pass that began before it
-- neither writes nor sweeps that task: the write is newer than what the pass read. Costs one EXISTS
-- while no pass runs.
local function stampWrite(passesKey, id)
  if redis.call('EXISTS', passesKey) == 1 then
    redis.call('HSET', passesKey, 'w:' .. id, redis.call('HINCRBY', passesKey, 'seq', 1))
  end
end

-- Whether task `id` was written after the pass whose start sequence number is `began`.
local function writtenSince(passesKey, id, began)
  local seq = redis.call('HGET', passesKey, 'w:' .. id)
  return seq ~= false and tonumber(seq) > began
end
