/** What one poll of a shard learned. Times are Redis server time (epoch ms). */
export interface PollOutcome {
  serverNow: number;
  /** When the shard next has due work: `serverNow` to poll again at once, Infinity when nothing is known. */
  nextDueAt: number;
}

const MAX_ERROR_BACKOFF_MS = 5_000;

/**
 * Polls one shard for as long as it runs, sleeping between polls until the next due time it learned
 * (capped by `idlePollMs`), or earlier when a wake-up hint names an earlier time. Deciding what is due
 * is Redis' job: the client clock only measures how long to sleep, corrected by the server's `now`.
 */
export class ShardLoop {
  private running = false;
  private loop?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private wakeSleeper?: () => void;
  /** Local time the current sleep ends at. */
  private sleepUntil = Infinity;
  /** Earliest hinted time that arrived while a poll was under way (local ms). */
  private hintedDuringPoll = Infinity;
  /** Server clock minus local clock, from the last poll. */
  private offset = 0;

  constructor(
    private readonly poll: () => Promise<PollOutcome>,
    private readonly idlePollMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops polling; resolves when a poll under way has finished. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeSleeper?.();
    await this.loop;
  }

  /** Work may be due at this server time: wake then, if that is earlier than planned. */
  hint(serverTime: number): void {
    const local = serverTime - this.offset;
    if (this.wakeSleeper) {
      if (local < this.sleepUntil) this.sleepFor(local - Date.now());
    } else if (local < this.hintedDuringPoll) {
      this.hintedDuringPoll = local;
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      this.hintedDuringPoll = Infinity;
      let outcome: PollOutcome;
      try {
        outcome = await this.poll();
        failures = 0;
      } catch (error) {
        if (!this.running) break;
        this.onError(error);
        failures++;
        await this.sleep(Math.min(MAX_ERROR_BACKOFF_MS, 50 * 2 ** failures));
        continue;
      }
      if (!this.running) break;
      this.offset = outcome.serverNow - Date.now();
      const wakeAt = Math.min(outcome.nextDueAt, outcome.serverNow + this.idlePollMs) - this.offset;
      const until = Math.min(wakeAt, this.hintedDuringPoll);
      const delay = until - Date.now();
      if (delay > 0) await this.sleep(delay);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wakeSleeper = () => {
        clearTimeout(this.timer);
        this.wakeSleeper = undefined;
        this.sleepUntil = Infinity;
        resolve();
      };
      this.sleepFor(ms);
    });
  }

  private sleepFor(ms: number): void {
    clearTimeout(this.timer);
    const wake = this.wakeSleeper!;
    this.sleepUntil = Date.now() + ms;
    this.timer = setTimeout(wake, Math.max(0, Math.ceil(ms)));
  }
}
