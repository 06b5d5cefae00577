import { SortedSet } from './sorted-set';

/** A key's value, by Redis type. Strings are UTF-8 text: the library stores nothing else. */
export type Value =
  | { type: 'string'; value: string }
  | { type: 'hash'; value: Map<string, string> }
  | { type: 'list'; value: string[] }
  | { type: 'zset'; value: SortedSet }
  | { type: 'set'; value: Set<string> };

export type ValueType = Value['type'];

/**
 * The keys of one memory instance, with expiry on the instance's clock. Like Redis, a key whose
 * collection became empty is deleted, and an expired key is gone when next looked at.
 */
export class Keyspace {
  private readonly values = new Map<string, Value>();
  private readonly expiries = new Map<string, number>();

  constructor(readonly now: () => number) {}

  get(key: string): Value | undefined {
    const expiry = this.expiries.get(key);
    if (expiry !== undefined && expiry <= this.now()) this.delete(key);
    return this.values.get(key);
  }

  set(key: string, value: Value): void {
    this.values.set(key, value);
  }

  delete(key: string): boolean {
    this.expiries.delete(key);
    return this.values.delete(key);
  }

  /** Deletes the key when its collection is empty. */
  dropIfEmpty(key: string, value: Value): void {
    const size = value.type === 'string' ? 1 : value.type === 'list' ? value.value.length : value.value.size;
    if (size === 0) this.delete(key);
  }

  expireAt(key: string, at: number): void {
    if (at <= this.now()) this.delete(key);
    else this.expiries.set(key, at);
  }

  /** Removes the key's expiry; whether it had one. */
  persist(key: string): boolean {
    return this.expiries.delete(key);
  }

  /** Milliseconds to live, -1 without expiry, -2 when absent. */
  ttl(key: string): number {
    if (!this.get(key)) return -2;
    const expiry = this.expiries.get(key);
    return expiry === undefined ? -1 : expiry - this.now();
  }

  keys(): string[] {
    return [...this.values.keys()].filter((key) => this.get(key) !== undefined);
  }

  clear(): void {
    this.values.clear();
    this.expiries.clear();
  }

  /** Every sorted set, for the clock's search of the next time something falls due. */
  *sortedSets(): Iterable<SortedSet> {
    for (const value of this.values.values()) if (value.type === 'zset') yield value.value;
  }
}
