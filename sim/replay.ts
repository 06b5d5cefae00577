import { type Command, textOf } from './engine';
import type { Recorded, World } from './world';

/** What a replay needs of a Redis client: one command at a time (ioredis' `call`). */
export interface RedisCall {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

/**
 * A script as Redis runs it in the replay: its clock reads the time the simulation ran it at. The
 * scripts read the time through one `redis.call('TIME')` (the now include); the memory engine's clock
 * answered that in the simulation, and Redis' own would answer something else.
 */
function atTime(command: Command, at: number): Command {
  if (command[0] !== 'EVALSHA') return command;
  const seconds = Math.floor(at / 1000);
  const micros = (at % 1000) * 1000;
  const text = textOf(String(command[1])).replace("redis.call('TIME')", `{'${seconds}', '${micros}'}`);
  return ['EVAL', text, ...command.slice(2)];
}

/**
 * Sends every command the simulation applied, in order, to a Redis server, and compares each reply
 * with the memory engine's. Returns the first difference, or undefined.
 */
export async function replay(recorded: Recorded[], redis: RedisCall): Promise<string | undefined> {
  await redis.call('FLUSHALL');
  for (const [step, { at, commands, replies }] of recorded.entries()) {
    for (const [i, command] of commands.entries()) {
      const [name, ...args] = atTime(command, at);
      let reply: unknown;
      try {
        reply = await redis.call(String(name), ...args);
      } catch (error) {
        // Error texts differ between servers (a script's line numbers): that it failed is compared.
        reply = 'error';
      }
      const expected = replies[i];
      if (JSON.stringify(reply) !== JSON.stringify(expected))
        return `step ${step} (${String(command[0])} ${brief(command)}): Redis answered ${JSON.stringify(reply)}, the memory engine ${JSON.stringify(expected)}`;
    }
  }
  return undefined;
}

/**
 * Every key without a TTL, with its type and value, sorted: the state two servers must agree on. Keys
 * with a TTL (call keys' records) are left out: the engine expires them by the simulated clock, Redis
 * by its own, which a replay of seconds does not move.
 */
export async function stateOf(read: (command: Command) => Promise<unknown>): Promise<string[]> {
  const keys = ((await read(['KEYS', '*'])) as string[]).sort();
  const state: string[] = [];
  for (const key of keys) {
    if (((await read(['PTTL', key])) as number) !== -1) continue;
    const type = (await read(['TYPE', key])) as string;
    let value: unknown;
    if (type === 'string') value = await read(['GET', key]);
    else if (type === 'list') value = await read(['LRANGE', key, 0, -1]);
    else if (type === 'hash') value = pairs((await read(['HGETALL', key])) as string[] | Record<string, string>);
    else if (type === 'zset') value = await read(['ZRANGE', key, 0, -1, 'WITHSCORES']);
    else if (type === 'set') value = ((await read(['SMEMBERS', key])) as string[]).sort();
    state.push(`${key} ${type} ${JSON.stringify(value)}`);
  }
  return state;
}

/** The engine's state, read as `stateOf` reads a server's. */
export function engineState(world: World): Promise<string[]> {
  return stateOf((command) => Promise.resolve(world.read(command)));
}

function pairs(flat: string[] | Record<string, string>): string[] {
  const entries = Array.isArray(flat)
    ? Array.from({ length: flat.length / 2 }, (_, i) => `${flat[2 * i]}=${flat[2 * i + 1]}`)
    : Object.entries(flat).map(([field, value]) => `${field}=${value}`);
  return entries.sort();
}

function brief(command: Command): string {
  return command[0] === 'EVALSHA' ? `${command.slice(3, 3 + Number(command[2])).join(' ')}` : command.join(' ');
}
