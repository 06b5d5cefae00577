import { SentCalls, type CallingClient } from './sent-calls';

/**
 * How long a command connection may stay silent while a reply is awaited before it is taken for dead.
 * Every script the library runs is bounded at a few ms and Redis answers a connection's calls in order,
 * so a healthy connection with calls waiting hears something within milliseconds; 3 s leaves room for
 * a busy server (a fork for a snapshot), a little more than the subscriber's PING is given, since calls
 * may queue behind a flush of thousands of pushes.
 */
export const COMMAND_REPLY_DEADLINE_MS = 3_000;
/**
 * A connection that has heard nothing for this long, with no call waiting, is sent a PING, so that a
 * silent link is found before a caller needs it. Consumers' idle polls usually come sooner, and then no
 * PING is sent: at most one command per 15 s per connection, which keeps an idle consumer within one
 * command a second (its polls and the subscriber's PING included).
 */
export const COMMAND_QUIET_PING_MS = 15_000;
/** How often each connection is looked at: a stall is noticed at most this late. */
const CHECK_EVERY_MS = 500;

/**
 * The parts of an ioredis connection (a `Redis`, or one node of a `Cluster`) the heartbeat uses; the
 * calls sent and not answered yet are counted by `SentCalls`, which wraps its `sendCommand`.
 */
export interface SupervisedClient extends CallingClient {
  readonly stream?: { on(event: 'data', listener: () => void): unknown; destroy(): void };
  ping(): Promise<unknown>;
  on(event: 'connect' | 'close', listener: () => void): unknown;
  off(event: 'connect', listener: () => void): unknown;
}

export interface CommandHeartbeatOptions {
  /**
   * The connection was silent for `silentMs` while `waiting` calls awaited their reply: they were
   * failed with `error` and the socket destroyed (ioredis connects again, or a Cluster drops the node).
   */
  stalled(silentMs: number, waiting: number): void;
  /** The error the waiting calls are failed with. */
  error(silentMs: number): Error;
  deadlineMs?: number;
  quietMs?: number;
  now?: () => number;
}

/**
 * Watches one command connection for silence. A connection whose traffic a middlebox drops without
 * closing it stays open: ioredis would wait on it until TCP gives up, which is never while something on
 * the way still acknowledges packets, and every call would wait its full timeout. Here a connection is
 * taken for dead when it heard nothing for the deadline while a call awaited its reply (a connection
 * still in its handshake awaits one too), or when a PING sent after a quiet spell went unanswered; the
 * calls awaiting replies are failed (they may or may not have run), and the socket is destroyed.
 */
export class CommandHeartbeat {
  private timer?: NodeJS.Timeout;
  private readonly sent: SentCalls;
  private lastHeardAt: number;
  /** Since when, as far as the checks saw, a reply has been awaited with nothing heard. */
  private awaitingSince?: number;
  /** Silence is expected until then (a blocking command such as WAIT is under way). */
  private silentUntil = 0;
  private confirming = false;
  private readonly deadlineMs: number;
  private readonly quietMs: number;
  private readonly now: () => number;
  private readonly heard = () => {
    this.lastHeardAt = this.now();
    this.awaitingSince = undefined;
  };
  private readonly connected = () => {
    this.heard();
    this.client.stream?.on('data', this.heard);
  };

  constructor(
    private readonly client: SupervisedClient,
    private readonly options: CommandHeartbeatOptions,
  ) {
    this.deadlineMs = options.deadlineMs ?? COMMAND_REPLY_DEADLINE_MS;
    this.quietMs = options.quietMs ?? COMMAND_QUIET_PING_MS;
    this.now = options.now ?? Date.now;
    this.lastHeardAt = this.now();
    this.sent = SentCalls.of(client);
  }

  start(): void {
    if (this.timer) return;
    this.client.on('connect', this.connected);
    // A connection already made (a Cluster node found after it connected) is followed from now on.
    if (this.client.status === 'connect' || this.client.status === 'ready') this.connected();
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.client.off('connect', this.connected);
  }

  /** Silence of up to `ms` from now is expected (a command that blocks the connection, such as WAIT). */
  allowSilence(ms: number): void {
    this.silentUntil = Math.max(this.silentUntil, this.now() + ms);
  }

  private check(): void {
    const silentMs = this.silentMs();
    if (silentMs === undefined || silentMs < this.deadlineMs || this.confirming) return;
    // Timers run before I/O in an event-loop turn: after a pause of this process (a long GC, a busy
    // loop) a reply may be waiting, unread. One more turn reads it before the connection is called dead.
    this.confirming = true;
    setImmediate(() => {
      this.confirming = false;
      const still = this.silentMs();
      if (still !== undefined && still >= this.deadlineMs) this.replace(still);
    });
  }

  /** How long the connection has been silent while a reply was due; undefined when none is due. */
  private silentMs(): number | undefined {
    const now = this.now();
    const { status } = this.client;
    // 'connect': the socket is open and the handshake (AUTH, the ready check) under way. Between two
    // ready checks of a server still loading its data nothing is due, and the connection is left alone.
    if (status !== 'ready' && status !== 'connect') {
      this.awaitingSince = undefined;
      return undefined;
    }
    if (this.sent.count === 0) {
      this.awaitingSince = undefined;
      if (status === 'ready' && now - this.lastHeardAt >= this.quietMs) this.client.ping().catch(() => undefined);
      return undefined;
    }
    this.awaitingSince ??= now;
    return now - Math.max(this.awaitingSince, this.lastHeardAt, this.silentUntil);
  }

  private replace(silentMs: number): void {
    // Failed here, each call gets a reason that says what happened; left to ioredis, those of a single
    // connection would fail as 'max retries' and a Cluster would send them again to another node,
    // whereas they may have run. ioredis' own failing of them when the socket closes comes second, and
    // changes nothing: a call settles once.
    const waiting = this.sent.failAll(this.options.error(silentMs));
    this.awaitingSince = undefined;
    this.lastHeardAt = this.now();
    // Ending it politely would wait for a FIN that may never come.
    this.client.stream?.destroy();
    this.options.stalled(silentMs, waiting);
  }
}
