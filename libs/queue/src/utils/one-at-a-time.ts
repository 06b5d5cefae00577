/**
 * Rounds of one kind, one at a time: a round asked for while one runs (Redis slow) is not doubled. A
 * round handles its own failures (Redis away: the next round tries again), so it never rejects.
 */
export class OneAtATime {
  private running = false;
  private owed = false;

  constructor(private readonly round: () => Promise<void>) {}

  run(): void {
    if (this.running) return;
    this.running = true;
    void this.round().finally(() => {
      this.running = false;
      if (!this.owed) return;
      this.owed = false;
      this.run();
    });
  }

  /** A round now, or as soon as the one in flight ends. */
  again(): void {
    if (this.running) this.owed = true;
    else this.run();
  }
}
