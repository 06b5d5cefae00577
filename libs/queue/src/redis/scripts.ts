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

function commandName(script: ScriptName): string {
  return 'nrq' + script.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

const sources = new Map<ScriptName, string>();
function source(script: ScriptName): string {
  let lua = sources.get(script);
  if (lua === undefined) {
    lua = readFileSync(join(__dirname, 'lua', `${script}.lua`), 'utf8');
    sources.set(script, lua);
  }
  return lua;
}

/**
 * Runs the library's Lua scripts on one client. ioredis' `defineCommand` sends EVALSHA and falls back
 * to EVAL on NOSCRIPT, so a `SCRIPT FLUSH` or a restarted server reloads them transparently.
 */
export class Scripts {
  constructor(readonly client: RedisClient) {
    const commands = client as unknown as Record<string, unknown>;
    for (const script of SCRIPT_NAMES) {
      const name = commandName(script);
      if (typeof commands[name] !== 'function') client.defineCommand(name, { lua: source(script) });
    }
  }

  run<T = unknown>(script: ScriptName, keys: string[], args: (string | number)[]): Promise<T> {
    const command = (this.client as unknown as Record<string, (...a: unknown[]) => Promise<T>>)[commandName(script)];
    // ioredis flattens array arguments itself: no spread of thousands of messages into a call.
    return command.call(this.client, keys.length, keys, args);
  }
}
