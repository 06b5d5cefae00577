import { Injectable, type INestApplication, type LoggerService } from '@nestjs/common';
import { QueueClock, QueueModule, Recurring, type RecurringContext } from 'nestjs-redis-queues';
import { createApp } from '@test/support/testing';

const SECOND = 1000;

@Injectable()
class Ticks {
  readonly firedAt: number[] = [];

  @Recurring({ name: 'every-second', everyMs: SECOND })
  tick(ctx: RecurringContext): void {
    this.firedAt.push(ctx.firedAt);
  }
}

/** The application's log, warnings kept. */
class Warnings implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

describe('QueueClock.advance over many occurrences (memory://)', () => {
  let app: INestApplication;
  let logs: Warnings;

  beforeEach(async () => {
    logs = new Warnings();
    app = await createApp({ imports: [QueueModule.forRoot({ connection: 'memory://' })], providers: [Ticks] }, logs);
  });

  afterEach(() => app.close());

  it('runs every occurrence of a 1 s repeat, one each second, and says nothing up to 1000 of them', async () => {
    const clock = app.get(QueueClock);
    const start = await clock.now();
    await clock.advance(1000 * SECOND);
    const { firedAt } = app.get(Ticks);
    expect(firedAt).toHaveLength(1000);
    // Ticks fall on whole seconds: the first within the first second, then one each second after it.
    expect(firedAt[0] - start).toBeGreaterThan(0);
    expect(firedAt[0] - start).toBeLessThanOrEqual(SECOND);
    expect(firedAt.filter((at, i) => at !== firedAt[0] + i * SECOND)).toEqual([]);
    expect(logs.warnings.filter((line) => line.includes('QueueClock.advance'))).toEqual([]);
  });

  it('warns once, naming the count, when one advance steps through more than 1000 occurrences', async () => {
    const clock = app.get(QueueClock);
    await clock.advance(1200 * SECOND);
    expect(app.get(Ticks).firedAt).toHaveLength(1200);
    expect(logs.warnings.filter((line) => line.includes('QueueClock.advance'))).toEqual([
      expect.stringMatching(/^QueueClock\.advance\(1200000\) has stepped through 1001 occurrences \(more than 1000\)/),
    ]);
  });
});
