-- The end of a claim: counters of what it did, then the groups due now (the candidates of the caller's
-- next call) and when the shard is next due. The head first: an idle shard (the common case when
-- polled) costs one ZRANGE. Returns {now, next due or -1, number of groups listed, group...}.
local function claimReply(readyKey, statsKey, now, limit, pending, delivered, expired)
  if pending ~= 0 then redis.call('HINCRBY', statsKey, 'pending', pending) end
  if delivered > 0 then redis.call('HINCRBY', statsKey, 'delivered', delivered) end
  if expired > 0 then redis.call('HINCRBY', statsKey, 'expired', expired) end
  local listed = {}
  local nextDue = -1
  local head = redis.call('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
  if #head > 0 then
    nextDue = tonumber(head[2])
    if nextDue <= now then
      listed = redis.call('ZRANGE', readyKey, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
      nextDue = now
    end
  end
  local out = {now, nextDue, #listed}
  for i = 1, #listed do out[#out + 1] = listed[i] end
  return out
end
