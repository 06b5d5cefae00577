-- Lists groups whose last-push entry is older than ttlMs, oldest first: the candidates of fixed-expire,
-- which declares their lists and checks each again. When none is, it says when the first may be: the
-- oldest entry's time (an entry is never later than its group's last push), so the caller need not
-- look before that time plus ttlMs, nor, with no entry at all, before now plus ttlMs.
-- Input: KEYS[1] last-push zset  ARGV[1] ttlMs  ARGV[2] most groups to list
-- Output: {now, oldest entry's time or -1 when there is none, group...}
--- @include "now"
local now = serverNow()
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #head == 0 then return {now, -1} end
local oldest = tonumber(head[2])
local cutoff = now - tonumber(ARGV[1])
if oldest > cutoff then return {now, oldest} end
local out = {now, oldest}
local idle = redis.call('ZRANGE', KEYS[1], '-inf', cutoff, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #idle do out[i + 2] = idle[i] end
return out
