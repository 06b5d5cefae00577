import { Cluster, Command, ReplyError } from 'ioredis';
import { deadline } from '../utils/timers';
import { QueueConnectionError, QueueMemoryError } from '../errors';
import { discarded, noReplyWithin, redisOutOfMemory, replicasMissed, unreachable } from './redis.messages';
import { describeConnectionFailure } from './connection-failure';
import { CallOutcomes, type Issued } from './call-outcome';
import type { RedisClient } from './redis-client';
import { ScriptLibrary } from './script-library';
import type { ScriptSet } from './script-set';
import { QUEUE_SCRIPTS } from './lua/queue.scripts';

type Evaluation = 'evalsha' | 'eval';
type Evaluate = (script: string, numKeys: number, keys: string[], args: (string | number)[]) => Promise<unknown>;
type Pipeline = Record<
  Evaluation,
  (script: string, numKeys: number, keys: string[], args: (string | number)[]) => Pipeline
> & {
  wait(replicas: number, timeoutMs: number): Pipeline;
  lrange(key: string, start: number, stop: number): Pipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
};

/** Where a script goes among the commands sent with it (`Scripts.runAmong`). */
interface Among {
  transaction: boolean;
  /** Index of the script's reply. */
  at: number;
  before?: (pipeline: Pipeline) => void;
  after?: (pipeline: Pipeline) => void;
}

/** The first `count` entries of a list, read just before a script runs. */
export interface ListRead {
  key: string;
  count: number;
}

/** Acknowledgement asked of replicas before a write resolves (Redis WAIT). */
export interface ReplicaWait {
  replicas: number;
  timeoutMs: number;
}

/** Redirections of a call ioredis passed on instead of following (see `redirected`). */
const MAX_REDIRECTS = 5;
const REDIRECT = /^(MOVED|ASK) /;

/**
 * Redis at `maxmemory` under `noeviction`: it refuses a command that may grow memory, and a script's
 * first such command (scripts are stopped before they wrote anything, never half-way).
 */
const OUT_OF_MEMORY = /\bOOM command not allowed\b/;

/** Replies that say the server cannot serve right now, as opposed to refusing this call. */
const UNAVAILABLE = /^(LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|BUSY) /;

/**
 * Runs the library's Lua scripts by SHA, falling back to EVAL (which caches the script) on NOSCRIPT,
 * so a `SCRIPT FLUSH` or a restarted server is transparent. Plain EVALSHA rather than ioredis'
 * `defineCommand`: with a variable number of keys, ioredis routes an auto-pipelined defined command
 * by its first argument (the key count), which sends it to the wrong Cluster node; EVALSHA's keys
 * are known to its router. Failures to reach Redis become QueueConnectionError. It runs the scripts of
 * every queue and those of the sets its queue kinds add (`add`).
 */
export class Scripts {
  private corked = false;
  private readonly outcomes: CallOutcomes;
  readonly library = new ScriptLibrary();

  constructor(
    readonly client: RedisClient,
    /**
     * Bound on a call's wait. Single-node clients enforce `commandTimeout` themselves; a Cluster client
     * holds calls in a queue of its own while it looks for a slot's new owner (failover), unbounded.
     */
    private readonly deadlineMs?: number,
    /** The connection's last error: why a call that was never sent had no connection. */
    private readonly connectionError: () => Error | undefined = () => undefined,
    /** Told before a command that may keep its connection silent for up to `ms` (WAIT), not to take it for dead. */
    private readonly expectSilence: (ms: number) => void = () => undefined,
  ) {
    this.add(QUEUE_SCRIPTS);
    this.outcomes = CallOutcomes.of(client);
  }

  /**
   * Lets this connection run a kind's scripts: its store adds them when it is made. They are read at
   * once, not in a call's path.
   */
  add(set: ScriptSet): this {
    this.library.add(set);
    for (const script of set.scripts) this.library.load(script);
    return this;
  }

  async run<T = unknown>(script: string, keys: string[], args: (string | number)[]): Promise<T> {
    // ioredis flattens array arguments (its typings do not say so): no spread of thousands of messages.
    const client = this.client as unknown as Record<Evaluation, Evaluate>;
    return this.evaluate<T>(script, (how, body) => client[how](body, keys.length, keys, args) as Promise<T>);
  }

  /**
   * Like `run`, but the call leaves at once in a socket write of its own, instead of waiting for the
   * tick to end to share one with every other command (auto-pipelining). For large calls made several
   * in a tick, such as a flush of pushes (one call per shard): Redis works on the first while this
   * process still encodes the next, and replies to each as it finishes.
   */
  async runNow<T = unknown>(script: string, keys: string[], args: (string | number)[]): Promise<T> {
    return this.evaluate<T>(script, (how, body) => this.sendNow<T>(how, body, keys, args));
  }

  /**
   * A lone command handed to the client's `sendCommand`, which writes it at once (auto-pipelining is
   * applied only by the command methods): lighter than a one-command pipeline (garbage collection 22 % → 9 %
   * of a CPU profile with 1,000 pushes in flight: BENCHMARKS.md, "Earlier runs", push before and after issue
   * #16). The client still applies commandTimeout and, in a Cluster, routes it by its keys and follows
   * redirections.
   */
  private sendNow<T>(how: Evaluation, script: string, keys: string[], args: (string | number)[]): Promise<T> {
    const command = new Command(how, [script, keys.length, keys, args], { replyEncoding: 'utf8' });
    void this.client.sendCommand(command);
    return command.promise as Promise<T>;
  }

  /** Plain commands (reads for `size()` and the dashboards), failing the way scripts do. */
  async call<T>(command: (client: RedisClient) => Promise<T>): Promise<T> {
    const issued = this.outcomes.issue();
    try {
      return await this.bounded(command(this.client));
    } catch (error) {
      throw this.asConnectionError(error, issued);
    }
  }

  /**
   * Runs a write, then WAITs on the same connection until `wait.replicas` replicas acknowledged it.
   * A pipeline, not two calls: in a Cluster it goes to the node that owns the keys, and WAIT counts
   * the writes of the connection it is sent on.
   */
  async runReplicated<T = unknown>(
    script: string,
    keys: string[],
    args: (string | number)[],
    wait: ReplicaWait,
  ): Promise<T> {
    const issued = this.outcomes.issue();
    this.expectSilence(wait.timeoutMs);
    const [[error, result], [waitError, acknowledged]] = await this.runAmong(
      script,
      keys,
      args,
      {
        transaction: false,
        at: 0,
        after: (pipeline) => pipeline.wait(wait.replicas, wait.timeoutMs),
      },
      issued,
    );
    if (error) throw this.asConnectionError(error, issued);
    if (waitError) throw this.asConnectionError(waitError, issued);
    if ((acknowledged as number) < wait.replicas) {
      throw replicasMissed(acknowledged as number, wait.replicas, wait.timeoutMs);
    }
    return result as T;
  }

  /**
   * Reads the head of some lists and runs a script in one MULTI, so the script sees the lists exactly
   * as they were read: it can tell the caller which of the entries it took without handing them
   * through Lua (which costs Redis more than reading them).
   */
  async runAfterReads<T = unknown>(
    script: string,
    keys: string[],
    args: (string | number)[],
    reads: ListRead[],
  ): Promise<{ lists: string[][]; result: T }> {
    const issued = this.outcomes.issue();
    let replies: [Error | null, unknown][];
    try {
      replies = await this.runAmong(
        script,
        keys,
        args,
        {
          transaction: true,
          at: reads.length,
          before: (multi) => {
            for (const { key, count } of reads) multi.lrange(key, 0, count - 1);
          },
        },
        issued,
      );
      for (const [error] of replies) if (error) throw this.asConnectionError(error, issued);
    } catch (error) {
      if (!(error instanceof QueueMemoryError)) throw error;
      return this.runReadingHere<T>(script, keys, args, reads.length);
    }
    return {
      lists: replies.slice(0, reads.length).map(([, value]) => value as string[]),
      result: replies[reads.length][1] as T,
    };
  }

  /**
   * `runAfterReads` on a full Redis (maxmemory, noeviction), which refuses every command queued in a
   * MULTI (EXECABORT, nothing applied), reads too, while it still runs a script that frees memory
   * before it grows it. One argument more asks the script to read the lists itself (the read-here include)
   * and to hand them back after its reply: each list's entries, then each list's length.
   */
  private async runReadingHere<T>(
    script: string,
    keys: string[],
    args: (string | number)[],
    count: number,
  ): Promise<{ lists: string[][]; result: T }> {
    const reply = await this.run<unknown[]>(script, keys, [...args, 'read-here']);
    const lengths = reply.slice(reply.length - count) as number[];
    let at = reply.length - count - lengths.reduce((sum, length) => sum + length, 0);
    const result = reply.slice(0, at) as T;
    const lists = lengths.map((length) => reply.slice(at, (at += length)) as string[]);
    return { lists, result };
  }

  /**
   * Sends a script among other commands, in one pipeline or MULTI (`at`: the script's place in it),
   * loading the script on NOSCRIPT and following a redirection of it. Each reply comes with its error.
   */
  private async runAmong(
    script: string,
    keys: string[],
    args: (string | number)[],
    among: Among,
    issued: Issued,
  ): Promise<[Error | null, unknown][]> {
    try {
      return await this.bounded(
        this.redirected(async () => {
          let sent = await this.send(script, keys, args, among, 'evalsha');
          if (isNoScript(sent[among.at][0])) sent = await this.send(script, keys, args, among, 'eval');
          if (isRedirect(sent[among.at][0])) throw sent[among.at][0];
          return sent;
        }),
      );
    } catch (error) {
      throw this.asConnectionError(error, issued);
    }
  }

  private async send(script: string, keys: string[], args: (string | number)[], among: Among, how: Evaluation) {
    const { lua, sha } = this.library.load(script);
    this.corkForThisTick();
    const pipeline = (among.transaction ? this.client.multi() : this.client.pipeline()) as unknown as Pipeline;
    among.before?.(pipeline);
    pipeline[how](how === 'eval' ? lua : sha, keys.length, keys, args);
    among.after?.(pipeline);
    const replies = await pipeline.exec();
    if (!replies) throw discarded(among.transaction === true);
    return replies;
  }

  /**
   * Unlike single commands (auto-pipelined), each pipeline or transaction is a socket write of its
   * own, and the shard pollers often send theirs in the same tick; a write costs more than its bytes,
   * so the socket holds them until the tick ends and sends them as one.
   */
  private corkForThisTick(): void {
    const stream = (this.client as { stream?: { cork(): void; uncork(): void } }).stream;
    if (!stream || this.corked) return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  /**
   * Runs a script by SHA, then by its text on NOSCRIPT (which caches it), through `send`; bounded,
   * redirections followed, and failures to reach Redis as QueueConnectionError.
   */
  private async evaluate<T>(script: string, send: (how: Evaluation, body: string) => Promise<T>): Promise<T> {
    const issued = this.outcomes.issue();
    const { lua, sha } = this.library.load(script);
    try {
      return await this.bounded(
        this.redirected(async () => {
          try {
            return await send('evalsha', sha);
          } catch (error) {
            if (!isNoScript(error)) throw error;
            return await send('eval', lua);
          }
        }),
      );
    } catch (error) {
      throw this.asConnectionError(error, issued);
    }
  }

  /**
   * Follows MOVED/ASK that reach us. ioredis follows them for a lone command, but an auto-pipelined
   * batch it follows only when every command in it was redirected alike; after a failover or a
   * resharding a batch mixes slots, and the redirected calls fail. Such a call was not executed,
   * so sending it again (once the slot map is fresh) cannot apply it twice.
   */
  private async redirected<T>(attempt: () => Promise<T>): Promise<T> {
    for (let redirects = 0; ; redirects++) {
      try {
        return await attempt();
      } catch (error) {
        const client = this.client;
        if (!(client instanceof Cluster) || redirects >= MAX_REDIRECTS || !isRedirect(error)) throw error;
        await new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve()));
      }
    }
  }

  /**
   * Redis' refusals (NOPERM, WRONGTYPE, ...) pass as they are, except OOM (QueueMemoryError); not
   * reaching Redis becomes QueueConnectionError.
   */
  private asConnectionError(error: unknown, issued: Issued): unknown {
    if (error instanceof QueueConnectionError || error instanceof QueueMemoryError || !(error instanceof Error))
      return error;
    const oom = outOfMemory(error);
    if (oom) return redisOutOfMemory(oom.message, oom);
    if (error instanceof ReplyError && !UNAVAILABLE.test(error.message)) return error;
    const outcome = this.outcomes.outcome(error, issued);
    const reason = describeConnectionFailure(error, this.connectionError());
    return unreachable(outcome, reason, error);
  }

  private bounded<T>(call: Promise<T>): Promise<T> {
    if (this.deadlineMs === undefined || !(this.client instanceof Cluster)) return call;
    return deadline(call, this.deadlineMs, noReplyWithin(this.deadlineMs));
  }
}

/**
 * The OOM refusal in an error: the error itself, or, for a MULTI that Redis discarded (EXECABORT), one
 * of the refusals of the commands queued in it.
 */
function outOfMemory(error: Error): Error | undefined {
  if (OUT_OF_MEMORY.test(error.message)) return error;
  const queued = (error as { previousErrors?: unknown[] }).previousErrors ?? [];
  return queued.find((cause): cause is Error => cause instanceof Error && OUT_OF_MEMORY.test(cause.message));
}

function isRedirect(error: unknown): boolean {
  return error instanceof ReplyError && REDIRECT.test((error as Error).message);
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
