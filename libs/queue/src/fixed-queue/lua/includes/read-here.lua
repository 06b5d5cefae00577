-- A full Redis (maxmemory, noeviction) refuses every command queued in a MULTI, reads included, so a
-- claim's caller cannot read the candidates' lists beside the script (Scripts.runAfterReads). It then
-- passes one argument more, and the script reads them itself before it changes them, and hands them
-- back after its reply (readHereReply). Candidate i is KEYS[firstKey + i - 1], up to KEYS[lastKey], its
-- count of entries to read ARGV[firstArg + 2i - 1] (after its name). Returns the lists, or nil when the
-- caller read them.
local function readHere(firstKey, lastKey, firstArg)
  if #ARGV < firstArg + 2 * (lastKey - firstKey + 1) then return nil end
  local lists = {}
  for k = firstKey, lastKey do
    lists[#lists + 1] = redis.call('LRANGE', KEYS[k], 0, tonumber(ARGV[firstArg + 2 * (k - firstKey) + 1]) - 1)
  end
  return lists
end

-- `out` followed by the entries of `lists`, then each list's length: the caller cuts them off the tail.
local function readHereReply(out, lists)
  if lists == nil then return out end
  for _, entries in ipairs(lists) do
    for i = 1, #entries do out[#out + 1] = entries[i] end
  end
  for _, entries in ipairs(lists) do out[#out + 1] = #entries end
  return out
end
