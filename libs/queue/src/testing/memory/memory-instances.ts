import type IORedis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { checkLuaPackage } from './lua-wasm';
import { MemoryClock } from './memory-clock';
import { memoryClient } from './memory-connector';
import { MemoryRedis } from './memory-redis';
import { registerMemoryClient } from '../../redis/memory-backend';
import { advanceMemory } from './advance';
import { badMemoryUrl, memoryClockConflict, memoryWarning } from './memory.messages';

/** Named instances: shared by every application of the process that names them, gone with it. */
const named = new Map<string, MemoryRedis>();

/**
 * The instance a `memory://` URL names. `memory://` alone is a new instance of its own (an
 * application sharing nothing); `memory://name` is the process' instance of that name.
 */
export function memoryInstance(url: string): MemoryRedis {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badMemoryUrl(url, 'not a URL');
  }
  const name = decodeURIComponent(`${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`);
  for (const key of parsed.searchParams.keys()) {
    if (key !== 'clock') throw badMemoryUrl(url, `unknown parameter "${key}"`);
  }
  const mode = parsed.searchParams.get('clock') ?? 'manual';
  if (mode !== 'manual' && mode !== 'system') throw badMemoryUrl(url, `clock must be manual or system, not "${mode}"`);
  if (name === '') return new MemoryRedis('', new MemoryClock(mode));
  const existing = named.get(name);
  if (existing) {
    if (existing.clock.mode !== mode) throw memoryClockConflict(name, existing.clock.mode, mode);
    return existing;
  }
  const instance = new MemoryRedis(name, new MemoryClock(mode));
  named.set(name, instance);
  return instance;
}

/** A client of the instance `url` names (ioredis, in-process: no socket). */
export function createMemoryClient(url: string, options: RedisOptions = {}): IORedis {
  // Loaded now, not at the first connection: a missing package fails the application's creation, saying
  // what to install, rather than every connection attempt.
  checkLuaPackage();
  const instance = memoryInstance(url);
  // Started now, while the application is being built, rather than at its first command: a test's
  // first case does not pay for it. A failure shows at the first connection, which waits for it.
  instance.ready().catch(() => undefined);
  const client = memoryClient(instance, options);
  registerMemoryClient(client, {
    clock: instance.clock,
    publish: (channel, message) => instance.publish(channel, message),
    advance: (ms, context, settleTimeoutMs) => advanceMemory(instance, ms, context, settleTimeoutMs),
    warning: memoryWarning,
  });
  return client;
}
