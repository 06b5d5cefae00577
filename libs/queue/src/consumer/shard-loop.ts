import type { ServerClock } from '../redis/server-clock';

/** What one poll of a shard learned. Times are Redis server time (epoch ms). */
export interface PollResult {
  serverNow: number;
  /** When the shard next has due work: `serverNow` to poll again at once, Infinity when nothing is known. */
  nextDueAt: number;
}

const MAX_ERROR_BACKOFF_MS = 5_000;

/**
 * Polls one shard for as long as it runs, sleeping between polls until the next due time it learned
 * (capped by `idlePollMs`), or earlier when a wake-up hint names an earlier time. Deciding what is due
 * is Redis' job: the client clock only measures how long to sleep, corrected by the server's `now`.
 * A loop `onHintsOnly` (a scheduled consumer) starts asleep and polls only after a hint, again while
 * work is due now, and never for work due later.
 */
export class ShardLoop {
  private running = false;
  private loop?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private immediate?: NodeJS.Immediate;
  private wakeSleeper?: () => void;
  /** Earliest hinted time that arrived while a poll was under way (server ms). */
  private hintedDuringPoll = Infinity;
  /** Server time the current sleep aims at, to re-arm the timer when the clock estimate moves. */
  private target = Infinity;
  private stopListening?: () => void;

  constructor(
    private readonly poll: () => Promise<PollResult>,
    private readonly clock: ServerClock,
    private readonly idlePollMs: number,
    private readonly onError: (error: unknown) => void,
    private readonly onHintsOnly = false,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopListening = this.clock.onChange(() => {
      if (!this.wakeSleeper || this.target === Infinity) return;
      const ms = this.clock.waitFor(this.target);
      // Reached as the clock moved (a test's clock stepping onto a due time): the poll starts now, not a
      // turn of the event loop later, which a test stepping through a day of ticks would pay at each.
      if (ms <= 0) this.wakeSleeper();
      else this.sleepFor(ms);
    });
    this.loop = this.run();
  }

  /** Stops polling; resolves when a poll under way has finished. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopListening?.();
    this.wakeSleeper?.();
    await this.loop;
  }

  /** A wake-up for now is set (the next turn of the event loop): a poll is about to start. */
  get waking(): boolean {
    return this.immediate !== undefined;
  }

  /** Work may be due at this server time: wake then, if that is earlier than planned. */
  hint(serverTime: number): void {
    if (this.wakeSleeper) {
      if (serverTime < this.target) {
        this.target = serverTime;
        this.sleepFor(this.clock.waitFor(serverTime));
      }
    } else if (serverTime < this.hintedDuringPoll) {
      this.hintedDuringPoll = serverTime;
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    if (this.onHintsOnly) await this.sleep(Infinity);
    while (this.running) {
      this.hintedDuringPoll = Infinity;
      let poll: PollResult;
      const sent = Date.now();
      try {
        poll = await this.poll();
        failures = 0;
      } catch (error) {
        if (!this.running) break;
        this.onError(error);
        failures++;
        await this.sleep(Math.min(MAX_ERROR_BACKOFF_MS, 50 * 2 ** failures));
        continue;
      }
      if (!this.running) break;
      this.clock.observe(poll.serverNow, sent);
      const due = this.onHintsOnly
        ? poll.nextDueAt <= poll.serverNow
          ? poll.serverNow
          : Infinity
        : // On a clock that stands still the idle poll would come at every move of it, for nothing: hints
          // are sent for all work there (WakeHints), and QueueClock.advance wakes whoever missed one.
          Math.min(poll.nextDueAt, this.clock.still ? Infinity : poll.serverNow + this.idlePollMs);
      const target = Math.min(due, this.hintedDuringPoll);
      const delay = this.clock.waitFor(target);
      if (delay > 0) await this.sleep(delay, target);
    }
  }

  private sleep(ms: number, target = Infinity): Promise<void> {
    return new Promise<void>((resolve) => {
      this.target = target;
      this.wakeSleeper = () => {
        clearTimeout(this.timer);
        clearImmediate(this.immediate);
        this.immediate = undefined;
        this.wakeSleeper = undefined;
        this.target = Infinity;
        resolve();
      };
      this.sleepFor(ms);
    });
  }

  private sleepFor(ms: number): void {
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.immediate = undefined;
    // Asleep until a hint: no timer (one of Infinity ms would fire at once).
    if (ms === Infinity) return;
    const wake = this.wakeSleeper!;
    // Due now (a hint for now, a test's clock moved onto the target): the next turn of the event loop,
    // not a timer's millisecond, which is what a test stepping through a day of ticks would wait for each.
    if (ms <= 0) this.immediate = setImmediate(wake);
    else this.timer = setTimeout(wake, Math.ceil(ms));
  }
}
