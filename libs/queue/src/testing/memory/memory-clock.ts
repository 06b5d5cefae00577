/**
 * The clock of a memory instance: what `TIME` answers, to scripts too. `manual` (the default) stands
 * still until a test moves it, starting at the wall clock's time when the instance was made;
 * `system` follows the wall clock (for running an application without Redis), moved ahead by what
 * tests advanced it.
 */
export class MemoryClock {
  private base: number;
  private readonly listeners = new Set<() => void>();

  constructor(readonly mode: 'manual' | 'system') {
    this.base = mode === 'manual' ? Date.now() : 0;
  }

  /** Whether it stands still between moves: a time ahead of it then comes only when it is moved. */
  get still(): boolean {
    return this.mode === 'manual';
  }

  now(): number {
    return this.mode === 'manual' ? this.base : Date.now() + this.base;
  }

  advance(ms: number): void {
    this.base += ms;
    if (ms > 0) for (const listener of this.listeners) listener();
  }

  /** Called each time the clock is moved ahead; returns the function that stops it. */
  onMove(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
