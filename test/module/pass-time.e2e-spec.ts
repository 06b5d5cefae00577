import { Injectable, type INestApplication } from '@nestjs/common';
import {
  DelayConsumer,
  type DelayQueue,
  getDelayQueueToken,
  QueueClock,
  QueueError,
  QueueModule,
} from 'nestjs-redis-queues';
import { passTime } from 'nestjs-redis-queues/testing';
import { createApp, redisUrl, uniquePrefix } from '@test/support/testing';

interface Meal {
  petId: string;
}

/** Each meal schedules the next one, a second on: short enough to pass for real on Redis. */
@Injectable()
class Pets {
  readonly hungry: string[] = [];
  feeding!: DelayQueue<Meal>;

  @DelayConsumer('pet-feeding')
  async onHungry(meal: Meal): Promise<void> {
    this.hungry.push(meal.petId);
    if (this.hungry.length < 2) await this.feeding.schedule(meal, { id: `hungry:${meal.petId}`, delayMs: 1000 });
  }
}

// One spec, both backends: on memory:// passTime advances the clock, on Redis it waits for real.
describe.each([
  ['memory://', () => 'memory://'],
  ['a Redis server', () => redisUrl()],
])('passTime on %s', (_backend, connection) => {
  let app: INestApplication;
  let clock: QueueClock;
  let feeding: DelayQueue<Meal>;

  beforeEach(async () => {
    app = await createApp({
      imports: [
        QueueModule.forRoot({ connection: connection(), prefix: uniquePrefix('pass-time') }),
        QueueModule.registerDelayQueue({ name: 'pet-feeding' }),
      ],
      providers: [Pets],
    });
    clock = app.get(QueueClock);
    feeding = app.get(getDelayQueueToken('pet-feeding'));
    app.get(Pets).feeding = feeding;
  });

  afterEach(async () => {
    await feeding.obliterate({ force: true });
    await app.close();
  });

  it('lets the meals fall due and be handled, the next one scheduled by the handler too', async () => {
    const pets = app.get(Pets);
    await feeding.schedule({ petId: 'milo' }, { id: 'hungry:milo', delayMs: 1000 });
    // On Redis each call lets its margin pass too (250 ms): a "not yet" leaves room for it.
    await passTime(clock, 500);
    expect(pets.hungry).toEqual([]);
    await passTime(clock, 500);
    expect(pets.hungry).toEqual(['milo']);
    await passTime(clock, 1000);
    expect(pets.hungry).toEqual(['milo', 'milo']);
    expect(await feeding.get('hungry:milo')).toBeNull();
  });

  it('stamps with nowSync within a few ms of now(), without a call', async () => {
    const read = await clock.now();
    const stamped = clock.nowSync();
    expect(stamped).toBeGreaterThanOrEqual(read - 5);
    expect(stamped).toBeLessThanOrEqual(read + 1000);
  });

  it('refuses what advance refuses', async () => {
    await expect(passTime(clock, -1)).rejects.toThrow(QueueError);
  });
});

describe('nowSync while Redis is down', () => {
  it("answers from this machine's clock before Redis ever answered", async () => {
    const app = await createApp({
      imports: [QueueModule.forRoot({ connection: 'redis://127.0.0.1:1', prefix: 'x', startup: 'continue' })],
    });
    try {
      const before = Date.now();
      const stamped = app.get(QueueClock).nowSync();
      expect(stamped).toBeGreaterThanOrEqual(before);
      expect(stamped).toBeLessThanOrEqual(Date.now());
      await expect(app.get(QueueClock).now()).rejects.toThrow();
    } finally {
      await app.close();
    }
  });
});
