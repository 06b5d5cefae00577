import type IORedis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import type { ClockSource } from './server-clock';

/** What `QueueClock.advance` hands the engine: this process' view of its queues' work. */
export interface AdvanceContext {
  /** Each consumer of this process: its running handlers, and whether a poll or outcome is on its way. */
  activities(): { consumer: string; handlers: number; working: boolean }[];
  /** Calls of the command connection sent and not answered yet. */
  waitingForReplies(): boolean;
  /** Has every consumer poll now. */
  wakeConsumers(): void;
  /** Where the engine reports a step that runs many occurrences at once. */
  warn(message: string): void;
}

/**
 * The core's view of a client of the in-process engine behind `memory://`, which lives in the
 * `nestjs-redis-queues/testing` entry: that engine registers each client it makes, and the core
 * reaches the engine only through this, never by importing it (a production application loads none
 * of it).
 */
export interface MemoryBackend {
  /** The instance's clock: what `TIME` answers, and the scripts read. */
  readonly clock: ClockSource;
  /**
   * PUBLISH on this instance now, without a command: a wake-up hint reaches the subscribers as the
   * command's would, minus the round trip a test's clock stepping through a day of ticks paid at each.
   */
  publish(channel: string, message: string): void;
  /** `QueueClock.advance` on this instance. */
  advance(ms: number, context: AdvanceContext, settleTimeoutMs: number): Promise<void>;
  /** The warning logged when an application's queues run on this instance (`target`: its URL). */
  warning(target: string): string;
}

/** The engine's entry, as the core loads it on the first memory URL. */
interface MemoryEntry {
  createMemoryClient(url: string, options: RedisOptions): IORedis;
}

const MEMORY_URL = /^memory:\/\//i;
const backends = new WeakMap<object, MemoryBackend>();

export function isMemoryUrl(connection: unknown): connection is string {
  return typeof connection === 'string' && MEMORY_URL.test(connection);
}

/** Called by the engine for each client it makes. */
export function registerMemoryClient(client: object, backend: MemoryBackend): void {
  backends.set(client, backend);
}

/** The engine behind a client, when it is a client of a memory instance. */
export function memoryBackendOf(client: object): MemoryBackend | undefined {
  return backends.get(client);
}

/**
 * A client of the memory instance `url` names, from the testing entry's engine, loaded now: the
 * module's `connection: 'memory://'` works from configuration alone, and an application on Redis
 * never loads the engine. The engine says what to install when its optional package is missing.
 */
export function createMemoryConnection(url: string, options: RedisOptions): IORedis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, never at start
  const entry = require('../testing/memory/memory-instances') as MemoryEntry;
  return entry.createMemoryClient(url, options);
}
