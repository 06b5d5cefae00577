import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

/** The Lua scripts, one per operation (`lua/<name>.lua`). */
export const SCRIPT_NAMES = [
  'queue-meta',
  'fixed-push',
  'fixed-take',
  'fixed-stats',
  'delay-schedule',
  'delay-move',
  'delay-cancel',
  'delay-get',
  'delay-claim',
  'delay-ack',
  'delay-fail',
  'delay-extend',
  'delay-release',
  'delay-requeue',
  'delay-stats',
  'delay-dead',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

type Evaluate = (script: string, numKeys: number, keys: string[], args: (string | number)[]) => Promise<unknown>;

interface Loaded {
  lua: string;
  sha: string;
}

const loaded = new Map<ScriptName, Loaded>();
function load(script: ScriptName): Loaded {
  let entry = loaded.get(script);
  if (entry === undefined) {
    const lua = readFileSync(join(__dirname, 'lua', `${script}.lua`), 'utf8');
    entry = { lua, sha: createHash('sha1').update(lua).digest('hex') };
    loaded.set(script, entry);
  }
  return entry;
}

/**
 * Runs the library's Lua scripts by SHA, falling back to EVAL (which caches the script) on NOSCRIPT,
 * so a `SCRIPT FLUSH` or a restarted server is transparent. Plain EVALSHA rather than ioredis'
 * `defineCommand`: with a variable number of keys, ioredis routes an auto-pipelined defined command
 * by its first argument (the key count), which sends it to the wrong Cluster node; EVALSHA's keys
 * are known to its router.
 */
export class Scripts {
  constructor(readonly client: RedisClient) {
    for (const script of SCRIPT_NAMES) load(script);
  }

  async run<T = unknown>(script: ScriptName, keys: string[], args: (string | number)[]): Promise<T> {
    const { lua, sha } = load(script);
    // ioredis flattens array arguments (its typings do not say so): no spread of thousands of messages.
    const client = this.client as unknown as Record<'evalsha' | 'eval', Evaluate>;
    try {
      return (await client.evalsha(sha, keys.length, keys, args)) as T;
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return (await client.eval(lua, keys.length, keys, args)) as T;
    }
  }
}
