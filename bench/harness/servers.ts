import { join } from 'node:path';
import IORedis from 'ioredis';
import { repoRoot } from './paths';

interface RedisProcess {
  url: string;
  stop(): Promise<void>;
}

interface RedisScripts {
  startRedis(): Promise<RedisProcess>;
}

const redisScripts = (): RedisScripts => require(join(repoRoot(), 'scripts', 'redis.js')) as RedisScripts;

export type Info = Map<string, string>;

export function parseInfo(text: string): Info {
  const info: Info = new Map();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) info.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return info;
}

export const infoNumber = (info: Info, field: string): number => Number(info.get(field) ?? 0);

/** `cmdstat_<name>` → calls and microseconds spent, from INFO commandstats. */
export function commandStats(info: Info): Map<string, { calls: number; usec: number }> {
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const [field, value] of info) {
    if (!field.startsWith('cmdstat_')) continue;
    const match = /calls=(\d+),usec=(\d+)/.exec(value);
    if (match) stats.set(field.slice('cmdstat_'.length), { calls: Number(match[1]), usec: Number(match[2]) });
  }
  return stats;
}

export interface BenchServer {
  url: string;
  /** False when REDIS_URL named a server: other clients may share it, so its figures are less clean. */
  private: boolean;
  /** A plain connection for measurements (INFO, MEMORY USAGE, fills). */
  admin: IORedis;
  info(section: string): Promise<Info>;
  /** Bytes the data holds: used_memory without client buffers and the script cache, which no task owns. */
  dataBytes(): Promise<number>;
  /** CPU time the server process has used so far (user + system), in ms. */
  cpuMs(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Redis servers for the scenarios. Without REDIS_URL each call starts a fresh private server (no
 * persistence), so memory and command counts see nothing but the contender under test; with REDIS_URL
 * every call shares that server and closing one deletes the keys the run wrote under `keyBase`.
 */
export class Servers {
  private readonly scripts = redisScripts();

  constructor(
    private readonly externalUrl: string | undefined,
    readonly keyBase: string,
  ) {}

  get external(): boolean {
    return this.externalUrl !== undefined;
  }

  async open(): Promise<BenchServer> {
    const process = this.externalUrl ? undefined : await this.scripts.startRedis();
    const url = this.externalUrl ?? process!.url;
    const admin = new IORedis(url, { maxRetriesPerRequest: null });
    const info = async (section: string) => parseInfo(await admin.info(section));
    return {
      url,
      private: !this.externalUrl,
      admin,
      info,
      dataBytes: async () => {
        const memory = await info('memory');
        return (
          infoNumber(memory, 'used_memory') -
          infoNumber(memory, 'mem_clients_normal') -
          infoNumber(memory, 'mem_clients_slaves') -
          infoNumber(memory, 'used_memory_scripts')
        );
      },
      cpuMs: async () => {
        const cpu = await info('cpu');
        return (infoNumber(cpu, 'used_cpu_user') + infoNumber(cpu, 'used_cpu_sys')) * 1000;
      },
      close: async () => {
        if (process) {
          admin.disconnect();
          await process.stop();
          return;
        }
        await deleteKeys(admin, `${this.keyBase}*`);
        await admin.quit();
      },
    };
  }
}

async function deleteKeys(client: IORedis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}
