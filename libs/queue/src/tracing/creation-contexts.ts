import { carrierAt } from '../redis/traced-json';

/**
 * Most links of one span: one per distinct creation context of its messages, the first ones. The SDK's
 * default span limit is the same.
 */
export const MAX_LINKS = 128;

/**
 * The creation contexts (trace carriers, see traced-json.ts) of the messages one script call writes,
 * for that call's send span: each distinct one once, the first MAX_LINKS of them, and how many
 * messages carry none (those take the send span's own context).
 */
export class CreationContexts {
  readonly carriers: string[] = [];
  /** Messages in the call. */
  count = 0;
  /** Messages that carry no creation context. */
  bare = 0;
  /** More distinct contexts than `carriers` holds. */
  overflow = false;
  private seen: Set<string> | undefined;
  private last: string | undefined;

  /** A stored message or task payload. */
  add(text: string): void {
    // Consecutive messages mostly share a context (a pushMany, a request's pushes to one group):
    // recognised in place, without cutting the carrier out again.
    const last = this.last;
    if (
      last !== undefined &&
      text.charCodeAt(0) === 48 &&
      text.charCodeAt(1) === 44 &&
      text.startsWith(last, 3) &&
      text.charCodeAt(3 + last.length) === 34
    ) {
      this.count++;
      return;
    }
    this.addCarrier(carrierAt(text, 0));
  }

  /** A message's carrier, or undefined when it carries none. */
  addCarrier(carrier: string | undefined): void {
    this.count++;
    if (carrier === undefined) {
      this.bare++;
      return;
    }
    this.last = carrier;
    const seen = (this.seen ??= new Set());
    if (seen.has(carrier)) return;
    seen.add(carrier);
    if (this.carriers.length < MAX_LINKS) this.carriers.push(carrier);
    else this.overflow = true;
  }

  /** The one context every message carries, if there is exactly one. */
  get sole(): string | undefined {
    return this.carriers.length === 1 && this.bare === 0 && !this.overflow ? this.carriers[0] : undefined;
  }
}
