-- Declares a @Recurring schedule for one process, and settles which of the schedules its processes
-- declare is in effect. Each process declaring it is recorded with a deadline it renews (it declares
-- again every few seconds); each definition with when it was first declared. The definition in effect
-- is the most recently first declared among those a live process declares: a pod of an older version
-- restarting during a rolling deploy does not bring its definition back, and once the last process of
-- the newer one is gone (a rollback), the older one takes over. It is then declared as delay-repeat
-- declares any repeat, so a schedule lost with Redis' data is placed again by whoever declares first.
-- Input:
--   KEYS[1..8] as delay-repeat  KEYS[9] declarations hash ('p:<process>' -> '<alive until>|<schedule>',
--     'd:<schedule>' -> '<first declared at>|<last declared at>|<declared by>')
--   ARGV[1] id  ARGV[2] this process  ARGV[3] its schedule text  ARGV[4] who declares it (for people)
--   ARGV[5] ms a process counts as alive after it declared  ARGV[6] when this process saw its schedule
--   first declared (0: never; kept when Redis loses the record)  ARGV[7] ms a schedule no live process
--   declares is remembered  ARGV[8] the schedule the tick window is for  ARGV[9..] tick window
-- Output: {status, occurrence | now, schedule in effect, then per schedule a live process declares:
--   schedule, declared by, first declared at}; status as delay-repeat's, or 'winner' when the window is
--   not for the schedule in effect (nothing but the declaration was written: call again with its window).
--- @include "declare-repeat"
local declarationsKey = KEYS[9]
local id, me, mine, by = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local aliveMs, known, keepMs, windowFor = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local now = serverNow()
local alive = {[mine] = true}
local defs = {}
local fields = redis.call('HGETALL', declarationsKey)
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  local name = string.sub(field, 3)
  if string.sub(field, 1, 2) == 'p:' then
    local aliveUntil, schedule = string.match(value, '^(%d+)|(.*)$')
    if name ~= me then
      if tonumber(aliveUntil) < now then redis.call('HDEL', declarationsKey, field) else alive[schedule] = true end
    end
  else
    local first, last, who = string.match(value, '^(%d+)|(%d+)|(.*)$')
    defs[name] = {tonumber(first), tonumber(last), who}
  end
end
local first = now
if defs[mine] then first = defs[mine][1] elseif known > 0 and known < now then first = known end
defs[mine] = {first, now, by}
redis.call('HSET', declarationsKey, 'p:' .. me, (now + aliveMs) .. '|' .. mine, 'd:' .. mine, first .. '|' .. now .. '|' .. by)
local winner, winnerFirst
local declared = {}
for schedule in pairs(alive) do
  local def = defs[schedule] or {now, now, ''}
  if not winner or def[1] > winnerFirst or (def[1] == winnerFirst and schedule > winner) then
    winner, winnerFirst = schedule, def[1]
  end
  table.insert(declared, schedule)
  table.insert(declared, def[3])
  table.insert(declared, def[1])
end
for schedule, def in pairs(defs) do
  if not alive[schedule] and def[2] < now - keepMs then redis.call('HDEL', declarationsKey, 'd:' .. schedule) end
end
local reply
if winner ~= windowFor then
  reply = {'winner', now}
else
  reply = declareRepeat(KEYS, id, winner, 'null', ARGV, 9)
end
table.insert(reply, winner)
for _, value in ipairs(declared) do table.insert(reply, value) end
return reply
