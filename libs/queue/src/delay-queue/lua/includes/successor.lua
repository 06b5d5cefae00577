-- successors: id -> run at, of a task scheduled again (replaced, moved, debounced) while a delivery of it
-- was running. Its payload is already the task's; it is not due until that delivery settles (ack, fail,
-- give-back, or a lease that ran out), so that no two runs of one id overlap. `promoteSuccessor` then
-- makes it the task: due at its time (now, if that passed), no attempts, no error, the running
-- delivery's token gone with its runs entry. Returns its run time, or nil when there is none.
local function promoteSuccessor(successorsKey, dueKey, runsKey, errorsKey, id)
  local at = redis.call('HGET', successorsKey, id)
  if not at then return nil end
  redis.call('HDEL', successorsKey, id)
  redis.call('HDEL', runsKey, id)
  redis.call('HDEL', errorsKey, id)
  redis.call('ZADD', dueKey, at, id)
  return tonumber(at)
end
