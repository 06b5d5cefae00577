/**
 * What the simulator uses of the library's engine and queues: its memory engine, its stores (the same
 * script calls with the same arguments the runtime makes) and the scripts' texts. With library.ts (the
 * queue's record and the recurring layer), the only files of the simulator that import the library:
 * everything else goes through what these two export.
 */
import crypto from 'node:crypto';
import { MemoryClock } from '../libs/queue/src/testing/memory/memory-clock';
import { MemoryRedis, type MemoryPeer } from '../libs/queue/src/testing/memory/memory-redis';
import { scriptLibrary } from '../libs/queue/src/queue-scripts';
import type { Scripts } from '../libs/queue/src/redis/scripts';
import { QueueKeys, shardOf } from '../libs/queue/src/redis/keys';
import { FixedQueueStore as CurrentFixedQueueStore } from '../libs/queue/src/fixed-queue/fixed-queue.store';
import { DelayQueueStore as CurrentDelayQueueStore } from '../libs/queue/src/delay-queue/delay-queue.store';
import { LateTry, type CallKey } from '../libs/queue/src/redis/call-keys';
import type { ResolvedDelayQueueOptions, ResolvedFixedQueueOptions } from '../libs/queue/src/interfaces';
import type { ClaimedBatch, FailReply } from '../libs/queue/src/fixed-queue/fixed-queue.store';
import type { ClaimedTask } from '../libs/queue/src/delay-queue/delay-queue.store';

import { previousRelease } from './previous';

export { LateTry, QueueKeys, shardOf };
export type { CallKey, ClaimedBatch, ClaimedTask, FailReply, ResolvedDelayQueueOptions, ResolvedFixedQueueOptions };

/** One command as Redis is sent it. */
export type Command = (string | number)[];

/** A reply the engine refused the command with (a Lua error, a wrong type). */
export class EngineError extends Error {}

/**
 * The memory engine, driven one command at a time, synchronously: the simulator decides when each
 * script runs, so nothing of the engine's own connection timing takes part.
 */
export class Engine {
  readonly clock = new MemoryClock('manual');
  private readonly redis = new MemoryRedis('', this.clock);
  private readonly replies: string[] = [];
  /** SHA1s of the scripts given to this instance (SCRIPT LOAD), as the library's clients load theirs. */
  private readonly loaded = new Set<string>();
  private readonly peer: MemoryPeer = {
    send: (bytes) => void this.replies.push(typeof bytes === 'string' ? bytes : bytes.toString('utf8')),
    hangUp: () => undefined,
  };

  private constructor(startMs: number) {
    this.clock.advance(startMs - this.clock.now());
  }

  static async start(startMs: number): Promise<Engine> {
    const engine = new Engine(startMs);
    await engine.redis.ready();
    engine.redis.connect(engine.peer);
    return engine;
  }

  now(): number {
    return this.clock.now();
  }

  /** Moves the clock (back too: a clock jump). */
  move(ms: number): void {
    this.clock.advance(ms);
  }

  run(command: Command): unknown {
    if (command[0] === 'EVALSHA' && !this.loaded.has(command[1] as string)) this.load(command[1] as string);
    this.replies.length = 0;
    this.redis.receive(this.peer, [command.map(String)]);
    const [reply] = parseReplies(this.replies.join(''));
    if (reply instanceof EngineError) throw reply;
    return reply;
  }

  private load(sha: string): void {
    this.replies.length = 0;
    this.redis.receive(this.peer, [['SCRIPT', 'LOAD', textOf(sha)]]);
    this.loaded.add(sha);
  }
}

/** Texts of the scripts the simulation ran, by SHA1: a replay sends each as EVAL. */
const TEXTS = new Map<string, string>();
const SHAS = new Map<string, string>();

/** The SHA1 of a script's text: EVALSHA spares the engine hashing the whole text at every call. */
function shaOf(text: string): string {
  let sha = SHAS.get(text);
  if (sha === undefined) {
    sha = crypto.createHash('sha1').update(text).digest('hex');
    SHAS.set(text, sha);
    TEXTS.set(sha, text);
  }
  return sha;
}

/** The text of a script the simulation ran by its SHA1. */
export function textOf(sha: string): string {
  const text = TEXTS.get(sha);
  if (text === undefined) throw new Error(`no script text for ${sha}`);
  return text;
}

/** The command that runs `script` as the library ships it (`text` gives its text: another release's). */
export function evalCommand(
  script: string,
  keys: string[],
  args: (string | number)[],
  text: (script: string) => string = scriptText,
): Command {
  return ['EVALSHA', shaOf(text(script)), keys.length, ...keys, ...args];
}

const LIBRARY = scriptLibrary();

/** A script's text as the library ships it, for a replay elsewhere. */
export function scriptText(script: string): string {
  return LIBRARY.text(script);
}

/**
 * How a store's call reaches Redis in the simulation: one script (or command) per scheduler step.
 * `previous`: the calling process runs the previous release.
 */
export type Issue = ((
  label: string,
  commands: Command[],
  pick: (replies: unknown[]) => unknown,
) => Promise<unknown>) & {
  previous?: boolean;
};

/** The `Scripts` of processes of the previous release: its stores are built on them. */
const PREVIOUS_SCRIPTS = new WeakSet<object>();

/**
 * The `Scripts` the stores are given: each call becomes one step the scheduler runs when it chooses,
 * with the command the library would send (reads of a claim in the same step, as its MULTI is), in
 * the text of the release the calling process runs.
 */
export function scriptsFor(issue: Issue): Scripts {
  const text = issue.previous ? previousRelease().scriptText : scriptText;
  const command = (script: string, keys: string[], args: (string | number)[]) => evalCommand(script, keys, args, text);
  const scripts = {
    // Every script of the package is in LIBRARY already: a store's own set adds nothing here.
    add: () => undefined,
    run: (script: string, keys: string[], args: (string | number)[]) =>
      issue(script, [command(script, keys, args)], ([reply]) => reply),
    runNow: (script: string, keys: string[], args: (string | number)[]) =>
      issue(script, [command(script, keys, args)], ([reply]) => reply),
    runReplicated: (script: string, keys: string[], args: (string | number)[]) =>
      issue(script, [command(script, keys, args)], ([reply]) => reply),
    runAfterReads: (
      script: string,
      keys: string[],
      args: (string | number)[],
      reads: { key: string; count: number }[],
    ) =>
      issue(
        script,
        [...reads.map(({ key, count }) => ['LRANGE', key, 0, count - 1]), command(script, keys, args)],
        (replies) => ({ lists: replies.slice(0, reads.length), result: replies[reads.length] }),
      ),
    call: (run: (client: unknown) => Promise<unknown>) => run(commandProxy(issue)),
  };
  if (issue.previous) PREVIOUS_SCRIPTS.add(scripts);
  return scripts as unknown as Scripts;
}

/** The previous release's keys of the queue `keys` name: that release builds its own. */
function previousKeys(keys: QueueKeys, shards: number): QueueKeys {
  const [, prefix, queue] = /^(.*):\{(.*)\}:meta$/.exec(keys.meta)!;
  return new (previousRelease().QueueKeys)(prefix, queue, shards);
}

/**
 * The stores the actors build: on the `Scripts` of a process of the previous release, that release's
 * store (its calls, its scripts' texts) takes the place of this tree's, so that an actor's code runs
 * either release the same way, as the processes of a rolling deploy do (docs/upgrading.md).
 */
export class FixedQueueStore extends CurrentFixedQueueStore {
  constructor(scripts: Scripts, keys: QueueKeys, options: ResolvedFixedQueueOptions) {
    super(scripts, keys, options);
    // A constructor that returns an object makes `new` give that object.
    if (PREVIOUS_SCRIPTS.has(scripts)) {
      const store = new (previousRelease().FixedQueueStore)(scripts, previousKeys(keys, options.shards), options);
      // 0.2.0's store names a failure's fate `outcome` (renamed since; the script's reply is the same).
      const fail = store.fail.bind(store);
      store.fail = async (...args) => {
        const reply = (await fail(...args)) as FailReply & { outcome?: FailReply['fate'] };
        return reply.outcome === undefined ? reply : { ...reply, fate: reply.outcome };
      };
      return store;
    }
  }
}

export class DelayQueueStore extends CurrentDelayQueueStore {
  constructor(scripts: Scripts, keys: QueueKeys, options: ResolvedDelayQueueOptions) {
    super(scripts, keys, options);
    if (PREVIOUS_SCRIPTS.has(scripts))
      return new (previousRelease().DelayQueueStore)(scripts, previousKeys(keys, options.shards), options);
  }
}

/** A stand-in for the client in plain commands (`client.hdel(...)`): each becomes a step. */
function commandProxy(issue: Issue): unknown {
  return new Proxy(
    {},
    {
      get:
        (_target, name: string) =>
        (...args: unknown[]) => {
          const flat = (name === 'call' ? [args[0], ...(args[1] as unknown[])] : [name, ...args]).flat() as Command;
          return issue(String(flat[0]), [flat], ([reply]) => reply);
        },
    },
  );
}

/**
 * Fencing tokens are random bytes (node:crypto's randomFillSync, drawn a thousand at a time): the
 * simulation draws them from its seed instead, so that a seed gives the same history byte for byte.
 * `next` fills with the seed's stream; the pool the library holds is used up first, so the next
 * token comes from the seed.
 */
export function seedTokens(next: () => number, ...drawTokens: (() => string)[]): () => void {
  const mutable = crypto as unknown as { randomFillSync: (buffer: Buffer) => Buffer };
  const original = mutable.randomFillSync;
  let filled = false;
  mutable.randomFillSync = (buffer: Buffer) => {
    for (let i = 0; i < buffer.length; i++) buffer[i] = next() & 0xff;
    filled = true;
    return buffer;
  };
  // Each release draws from a pool of its own.
  for (const drawToken of drawTokens) {
    filled = false;
    while (!filled) drawToken();
  }
  // Returns what puts node:crypto back (the rest of the pool drawn stays seeded: still distinct tokens).
  return () => {
    mutable.randomFillSync = original;
  };
}

export { fencingToken } from '../libs/queue/src/redis/fencing-token';
export { entryMessage } from '../libs/queue/src/fixed-queue/fixed-entry';

/** Parses RESP replies as ioredis hands them over: bulk strings as strings, nil as null, errors as EngineError. */
function parseReplies(text: string): unknown[] {
  let at = 0;
  const line = (): string => {
    const end = text.indexOf('\r\n', at);
    const value = text.slice(at, end);
    at = end + 2;
    return value;
  };
  const one = (): unknown => {
    const head = line();
    const kind = head[0];
    const rest = head.slice(1);
    if (kind === '+') return rest;
    if (kind === '-') return new EngineError(rest);
    if (kind === ':') return Number(rest);
    if (kind === '$') {
      const length = Number(rest);
      if (length < 0) return null;
      // Lengths count bytes: payloads here are ASCII, so characters and bytes agree.
      const value = text.slice(at, at + length);
      at += length + 2;
      return value;
    }
    if (kind === '*') {
      const count = Number(rest);
      if (count < 0) return null;
      const items: unknown[] = [];
      for (let i = 0; i < count; i++) items.push(one());
      return items;
    }
    throw new Error(`unexpected reply ${JSON.stringify(head)}`);
  };
  const replies: unknown[] = [];
  while (at < text.length) replies.push(one());
  return replies;
}
