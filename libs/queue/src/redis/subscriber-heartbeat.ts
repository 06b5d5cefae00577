/**
 * How often the subscriber connection is asked for a PING: one command per process, whatever its
 * consumers. Every 3 s keeps an idle consumer within about one command a second, its polls included
 * (every 2 s did not: bench idle), and a dead link noticed within about 5 s.
 */
export const SUBSCRIBER_PING_EVERY_MS = 3_000;
/**
 * How long a PING may go unanswered before the connection is taken for dead. Loopback and a LAN answer
 * in well under a millisecond, and every script the library runs is bounded at a few ms; 2 s leaves
 * room for a busy server (a fork for a snapshot).
 */
export const SUBSCRIBER_PING_DEADLINE_MS = 2_000;

export interface SubscriberHeartbeatOptions {
  /** Sends one PING; resolves on its reply. */
  ping(): Promise<unknown>;
  /** Whether a PING can go out now (the connection is ready): none is sent while it reconnects. */
  ready(): boolean;
  /** A PING went unanswered past the deadline. */
  stalled(): void;
  everyMs?: number;
  deadlineMs?: number;
  now?: () => number;
}

/**
 * Asks a subscriber connection for a sign of life on an interval. A connection whose traffic a
 * middlebox drops without closing it (a NAT or load balancer forgetting an idle flow) stays open and
 * silent: ioredis would wait on it for ever, and with it every wake-up hint. A PING with a deadline
 * is what notices. One PING at a time: while one is unanswered, none is added.
 */
export class SubscriberHeartbeat {
  private interval?: NodeJS.Timeout;
  private deadline?: NodeJS.Timeout;
  /** Which PING is awaited: a reply to an older one (after a stall) settles nothing. */
  private beat = 0;
  private lastReplyAt?: number;
  private readonly everyMs: number;
  private readonly deadlineMs: number;
  private readonly now: () => number;

  constructor(private readonly options: SubscriberHeartbeatOptions) {
    this.everyMs = options.everyMs ?? SUBSCRIBER_PING_EVERY_MS;
    this.deadlineMs = options.deadlineMs ?? SUBSCRIBER_PING_DEADLINE_MS;
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.interval) return;
    this.interval = setInterval(() => this.send(), this.everyMs);
    this.interval.unref();
  }

  stop(): void {
    clearInterval(this.interval);
    this.interval = undefined;
    this.settle();
  }

  /** Something came from Redis on this connection (a reply, a message). */
  replied(): void {
    this.lastReplyAt = this.now();
  }

  /** How long ago the connection last said anything; undefined before its first reply. */
  get lastReplyAgoMs(): number | undefined {
    return this.lastReplyAt === undefined ? undefined : Math.max(0, this.now() - this.lastReplyAt);
  }

  private send(): void {
    if (this.deadline || !this.options.ready()) return;
    const beat = ++this.beat;
    this.deadline = setTimeout(() => this.missed(beat), this.deadlineMs);
    this.deadline.unref();
    this.options.ping().then(
      () => {
        this.replied();
        if (beat === this.beat) this.settle();
      },
      // A refused or flushed PING means the connection closed, which ioredis notices and reconnects
      // by itself; only silence is this heartbeat's business.
      () => beat === this.beat && this.settle(),
    );
  }

  private missed(beat: number): void {
    // Timers run before I/O in an event-loop turn: after a pause of this process (a long GC, a busy
    // loop) the reply may be waiting, unread. One more turn reads it before the link is called dead.
    setImmediate(() => {
      if (beat !== this.beat || !this.deadline) return;
      this.settle();
      this.beat++;
      this.options.stalled();
    });
  }

  private settle(): void {
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}
