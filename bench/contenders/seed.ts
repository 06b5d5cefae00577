import IORedis from 'ioredis';

export const SEED = 'seed script';

/** The seed's writer, one call per message: a fixed-length list per game, oldest dropped when full. */
const PUSH = `
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then redis.call('LPOP', KEYS[1]) end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
`;

// The seed's reader: one batch of one game. It takes exactly `count` (the seed's `lrange 0 num` was off by
// one), and drops the game from the set once its list is empty, which the seed's consumers need to stop
// visiting it.
const TAKE = `
local n = tonumber(ARGV[2])
local items = redis.call('LRANGE', KEYS[1], 0, n - 1)
if #items > 0 then redis.call('LTRIM', KEYS[1], n, -1) end
if #items < n then redis.call('SREM', KEYS[2], ARGV[1]) end
return items
`;

export interface SeedClient extends IORedis {
  seedPush(key: string, json: string, capacity: number, ttlSeconds: number): Promise<unknown>;
  seedTake(key: string, games: string, game: string, count: number): Promise<string[]>;
}

/** Auto-pipelined like the library's client, so both send the same number of round trips per turn. */
export function seedClient(url: string): SeedClient {
  const client = new IORedis(url, { enableAutoPipelining: true });
  client.defineCommand('seedPush', { numberOfKeys: 1, lua: PUSH });
  client.defineCommand('seedTake', { numberOfKeys: 2, lua: TAKE });
  return client as SeedClient;
}
