import { Injectable, type INestApplication } from '@nestjs/common';
import {
  DelayConsumer,
  type DelayContext,
  type DelayQueue,
  getDelayQueueToken,
  QueueClock,
  QueueError,
  QueueModule,
  Recurring,
  type RecurringContext,
} from 'nestjs-redis-queues';
import { createApp, deferred, pollUntil } from '@test/support/testing';

const HOUR = 3600_000;

interface Meal {
  petId: string;
}

/** What a pet backend does with its feeding queue: records who got hungry, and when by the queues' clock. */
@Injectable()
class Pets {
  readonly hungry: { petId: string; attempt: number; at: number }[] = [];
  /** Attempts to fail, by pet. */
  readonly failing = new Map<string, number>();
  /** A handler that takes real time before it settles, by pet. */
  readonly slow = new Map<string, Promise<void>>();
  readonly started: string[] = [];
  clock?: QueueClock;

  @DelayConsumer('pet-feeding')
  async onHungry(meal: Meal, ctx: DelayContext): Promise<void> {
    this.started.push(meal.petId);
    await this.slow.get(meal.petId);
    const failures = this.failing.get(meal.petId) ?? 0;
    if (ctx.attempt <= failures) throw new Error(`${meal.petId} refused the bowl`);
    this.hungry.push({ petId: meal.petId, attempt: ctx.attempt, at: await this.clock!.now() });
  }
}

@Injectable()
class Digest {
  readonly occurrences: number[] = [];

  @Recurring({ name: 'hourly-digest', everyMs: HOUR })
  run(ctx: RecurringContext): void {
    this.occurrences.push(ctx.firedAt);
  }
}

describe('QueueClock on memory://', () => {
  let app: INestApplication;
  let pets: Pets;
  let clock: QueueClock;
  let feeding: DelayQueue<Meal>;

  beforeEach(async () => {
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: 'memory://', prefix: 'pets' }),
        QueueModule.registerDelayQueue({
          name: 'pet-feeding',
          shards: 2,
          backoff: { type: 'fixed', delayMs: 60_000 },
          maxAttempts: 3,
        }),
      ],
      providers: [Pets, Digest],
    });
    pets = app.get(Pets);
    clock = app.get(QueueClock);
    pets.clock = clock;
    feeding = app.get(getDelayQueueToken('pet-feeding'));
  });

  afterEach(async () => {
    await app.close();
  });

  it('stands still until advanced, and makes a pet hungry exactly 4 hours after it was fed', async () => {
    const fedAt = await clock.now();
    await feeding.schedule({ petId: 'rex' }, { id: 'hungry:rex', delayMs: 4 * HOUR });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(await clock.now()).toBe(fedAt);

    await clock.advance(4 * HOUR - 1);
    expect(pets.hungry).toEqual([]);
    await clock.advance(1);
    expect(pets.hungry).toEqual([{ petId: 'rex', attempt: 1, at: fedAt + 4 * HOUR }]);
    expect(await feeding.get('hungry:rex')).toBeNull();
  });

  it('moves a meal 2 hours sooner with an acceleration card (shift)', async () => {
    const fedAt = await clock.now();
    await feeding.schedule({ petId: 'rex' }, { id: 'hungry:rex', delayMs: 4 * HOUR });
    await clock.advance(HOUR);
    await feeding.shift('hungry:rex', -2 * HOUR);
    await clock.advance(HOUR - 1);
    expect(pets.hungry).toEqual([]);
    await clock.advance(1);
    expect(pets.hungry).toEqual([{ petId: 'rex', attempt: 1, at: fedAt + 2 * HOUR }]);
  });

  it('runs the retries that fall due within one advance, at their due times', async () => {
    const fedAt = await clock.now();
    pets.failing.set('rex', 2);
    await feeding.schedule({ petId: 'rex' }, { id: 'hungry:rex', delayMs: HOUR });
    await clock.advance(4 * HOUR);
    // Two refusals, each retried a minute later (fixed backoff), all within the one call.
    expect(pets.hungry).toEqual([{ petId: 'rex', attempt: 3, at: fedAt + HOUR + 2 * 60_000 }]);
    expect(pets.started).toEqual(['rex', 'rex', 'rex']);
  });

  it('runs a recurring schedule once per tick that fell due, at each tick', async () => {
    const digest = app.get(Digest);
    const start = await clock.now();
    await clock.advance(4 * HOUR);
    // Ticks of everyMs fall on multiples of it: four in any four hours, each run when it fell due.
    const first = Math.ceil((start + 1) / HOUR) * HOUR;
    expect(digest.occurrences).toEqual([first, first + HOUR, first + 2 * HOUR, first + 3 * HOUR]);
  });

  it('does not move the clock while a handler runs: a slow handler keeps its lease across a 4 hour advance', async () => {
    const release = deferred();
    pets.slow.set('rex', release.promise);
    const { runAt: rexDue } = await feeding.schedule({ petId: 'rex' }, { id: 'hungry:rex', delayMs: HOUR });
    await feeding.schedule({ petId: 'tom' }, { id: 'hungry:tom', delayMs: 3 * HOUR });
    const advanced = clock.advance(4 * HOUR);
    await pollUntil(() => pets.started.length > 0, 'rex started');
    // Held at rex's due time while its handler runs, so tom's (two hours on) cannot start beside it.
    expect(await clock.now()).toBe(rexDue);
    expect(pets.started).toEqual(['rex']);
    release.resolve();
    await advanced;
    expect(pets.started).toEqual(['rex', 'tom']);
    expect(pets.hungry.map(({ petId, attempt }) => [petId, attempt])).toEqual([
      ['rex', 1],
      ['tom', 1],
    ]);
  });

  it('rejects a step it cannot finish: a handler still running after settleTimeoutMs', async () => {
    const release = deferred();
    pets.slow.set('rex', release.promise);
    await feeding.schedule({ petId: 'rex' }, { id: 'hungry:rex', delayMs: 0 });
    await expect(clock.advance(HOUR, { settleTimeoutMs: 100 })).rejects.toThrow(/Pets\.onHungry \(1 running\)/);
    release.resolve();
  });

  it('refuses an advance that is not a whole, non-negative number of milliseconds', async () => {
    for (const bad of [-1, 1.5, NaN, Infinity, '10' as unknown as number]) {
      await expect(clock.advance(bad)).rejects.toThrow(QueueError);
    }
  });

  it('keeps two applications apart unless they name the same instance', async () => {
    const other = await createApp({ imports: [QueueModule.forRoot({ connection: 'memory://', prefix: 'pets' })] });
    const shared = [
      await createApp({ imports: [QueueModule.forRoot({ connection: 'memory://farm', prefix: 'a' })] }),
      await createApp({ imports: [QueueModule.forRoot({ connection: 'memory://farm', prefix: 'b' })] }),
    ];
    try {
      const before = await other.get(QueueClock).now();
      await clock.advance(HOUR);
      expect(await other.get(QueueClock).now()).toBe(before);
      await shared[0].get(QueueClock).advance(HOUR);
      expect(await shared[1].get(QueueClock).now()).toBe(await shared[0].get(QueueClock).now());
    } finally {
      await Promise.all([other, ...shared].map((each) => each.close()));
    }
  });
});

describe('QueueClock on a Redis server', () => {
  it('rejects advance with a QueueError that names memory://', async () => {
    const app = await createApp({
      imports: [QueueModule.forRoot({ connection: 'redis://127.0.0.1:1', prefix: 'x', startup: 'continue' })],
    });
    try {
      await expect(app.get(QueueClock).advance(1000)).rejects.toThrow(/needs connection: 'memory:\/\/'/);
    } finally {
      await app.close();
    }
  });
});
