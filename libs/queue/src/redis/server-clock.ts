/** Trust a sample as is when its round trip was this short. */
const TRUSTED_ROUND_TRIP_MS = 2;
/** Re-arm sleeping pollers when the estimate moves by more than this. */
const SIGNIFICANT_CHANGE_MS = 2;

/**
 * This process' estimate of Redis' clock, used only to turn "due at server time T" into a local timer.
 * `serverNow - received` is a lower bound of the offset, loose by however long the reply waited: a busy
 * event loop makes that 100 ms and more, which would make every sleep end that much late. So a sample
 * is taken when it is tighter than the estimate, or when its round trip was short enough to be trusted
 * as is (which lets the estimate follow the clocks when they are adjusted). One clock per connection: every queue's
 * producers' replies and every consumer's polls feed it, so one slow reply is soon corrected.
 */
export class ServerClock {
  private offset = 0;
  private seen = false;
  private readonly listeners = new Set<() => void>();

  observe(serverNow: number, sentAt: number): void {
    const received = Date.now();
    const sample = serverNow - received;
    if (this.seen && sample <= this.offset && received - sentAt > TRUSTED_ROUND_TRIP_MS) return;
    const moved = Math.abs(sample - this.offset);
    this.offset = sample;
    const first = !this.seen;
    this.seen = true;
    if (!first && moved > SIGNIFICANT_CHANGE_MS) for (const listener of this.listeners) listener();
  }

  /** Whether a reply has been seen: until then `estimate` is this machine's clock. */
  get known(): boolean {
    return this.seen;
  }

  /** Local epoch ms at which the server's clock will read `serverTime`. */
  toLocal(serverTime: number): number {
    return serverTime - this.offset;
  }

  /** The server's clock as this process estimates it now, epoch ms (0 offset until a reply was seen). */
  estimate(): number {
    return Date.now() + this.offset;
  }

  /** Called when the estimate moved enough that timers set from it should be set again. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
