/**
 * The clock of a memory instance: what `TIME` answers, to scripts too. `manual` (the default) stands
 * still until a test moves it, starting at the wall clock's time when the instance was made;
 * `system` follows the wall clock (for running an application without Redis), moved ahead by what
 * tests advanced it.
 */
export class MemoryClock {
  private base: number;

  constructor(readonly mode: 'manual' | 'system') {
    this.base = mode === 'manual' ? Date.now() : 0;
  }

  now(): number {
    return this.mode === 'manual' ? this.base : Date.now() + this.base;
  }

  advance(ms: number): void {
    this.base += ms;
  }
}
