-- Moves `member` of the zset `key` (where it is) to `score`. A full Redis (maxmemory, noeviction) lets
-- a script through only once it has written something, refusing a first command that may grow memory;
-- ZADD is one, even for a member already there. ZREM first makes the move a script's first write, so
-- the consumers' bookkeeping (lease extensions, retry times) goes on while they drain a full Redis.
local function rescore(key, score, member)
  redis.call('ZREM', key, member)
  redis.call('ZADD', key, score, member)
end
