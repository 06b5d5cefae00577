/** Trust a sample as is when its round trip was this short. */
const TRUSTED_ROUND_TRIP_MS = 2;
/** Re-arm sleeping pollers when the estimate moves by more than this. */
const SIGNIFICANT_CHANGE_MS = 2;

/** A clock read directly rather than estimated from replies: a memory instance's, in this process. */
export interface ClockSource {
  now(): number;
  /** Stands still between moves (a test's clock): a later time comes only when it is moved. */
  readonly still: boolean;
  onMove(listener: () => void): () => void;
}

/**
 * This process' estimate of Redis' clock, used only to turn "due at server time T" into a local timer.
 * `serverNow - received` is a lower bound of the offset, loose by however long the reply waited: a busy
 * event loop makes that 100 ms and more, which would make every sleep end that much late. So a sample
 * is taken when it is tighter than the estimate, or when its round trip was short enough to be trusted
 * as is (which lets the estimate follow the clocks when they are adjusted). One clock per connection: every queue's
 * producers' replies and every consumer's polls feed it, so one slow reply is soon corrected.
 *
 * A memory instance's clock is in this process: it is read, never estimated. Estimating it went wrong
 * twice over when a test holds it still: the estimate ran ahead with the wall clock (timers armed for
 * a due time fired while the held clock had not reached it, and their polls found nothing, again and
 * again), and a reply computed before `advance` moved it set the estimate hours back.
 */
export class ServerClock {
  private offset = 0;
  private seen = false;
  private source?: ClockSource;
  private unfollow?: () => void;
  private readonly listeners = new Set<() => void>();

  /** Reads `source` from now on instead of estimating; its moves re-arm the timers set from it. */
  follow(source: ClockSource): void {
    this.source = source;
    this.seen = true;
    this.unfollow = source.onMove(() => this.changed());
  }

  /** No more re-arming on the source's moves (the connection closed; a named instance outlives it). */
  close(): void {
    this.unfollow?.();
    this.unfollow = undefined;
  }

  observe(serverNow: number, sentAt: number): void {
    if (this.source) return;
    const received = Date.now();
    const sample = serverNow - received;
    if (this.seen && sample <= this.offset && received - sentAt > TRUSTED_ROUND_TRIP_MS) return;
    const moved = Math.abs(sample - this.offset);
    this.offset = sample;
    const first = !this.seen;
    this.seen = true;
    if (!first && moved > SIGNIFICANT_CHANGE_MS) this.changed();
  }

  /**
   * Whether the clock stands still between moves (a test's memory clock): work due later comes only with
   * a move, so nothing is gained by polling for it meanwhile, and hints must not count on such polls.
   */
  get still(): boolean {
    return this.source?.still === true;
  }

  /** Whether a reply has been seen: until then `estimate` is this machine's clock. */
  get known(): boolean {
    return this.seen;
  }

  /** Local epoch ms at which the server's clock will read `serverTime`, were it to run as this machine's does. */
  toLocal(serverTime: number): number {
    return serverTime - (this.source ? this.source.now() - Date.now() : this.offset);
  }

  /**
   * How long until the server's clock reads `serverTime`, ms (0 or less: it does): what a timer for it
   * waits. Infinity on a clock that stands still short of it: only a move brings it, and re-arms it.
   */
  waitFor(serverTime: number): number {
    if (this.source?.still) return serverTime <= this.source.now() ? 0 : Infinity;
    return this.toLocal(serverTime) - Date.now();
  }

  /** The server's clock as this process estimates it now, epoch ms (0 offset until a reply was seen). */
  estimate(): number {
    return this.source ? this.source.now() : Date.now() + this.offset;
  }

  /** Called when the estimate moved enough that timers set from it should be set again. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}
