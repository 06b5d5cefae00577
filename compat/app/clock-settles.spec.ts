import { Injectable, type INestApplication, type Type } from '@nestjs/common';
import { stat } from 'node:fs/promises';
import {
  BatchConsumer,
  DelayConsumer,
  type DelayQueue,
  type FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueClock,
  QueueModule,
  Recurring,
  type RecurringContext,
} from 'nestjs-redis-queues';
import { Test } from '@nestjs/testing';

// The library's test of QueueClock.advance (test/module/queue-clock-settles.e2e-spec.ts), run by this
// application's own runner (jest on Nest 11, vitest on Nest 12) on the packed library: handlers that
// write to queues while `advance` steps must settle every time. Each case runs its flow 50 times in a row on one
// application, each run a test under the runner's default timeout (5 s): a stall costs the whole `settleTimeoutMs`,
// and a step that moves on too early shows as a handler missing or late in the exact record each run checks.

const HOUR = 3600_000;
const RUNS = 50;

interface Meal {
  petId: string;
}

/** What every handler below saw, with the queues' time it ran at. */
@Injectable()
class Journal {
  readonly lines: string[] = [];
  clock!: QueueClock;

  write(line: string): void {
    this.lines.push(`${this.clock.nowSync()} ${line}`);
  }

  take(): string[] {
    return this.lines.splice(0);
  }
}

/** The testing page's example: a hungry pet gets its next meal scheduled in 4 hours. */
@Injectable()
class Pets {
  feeding!: DelayQueue<Meal>;

  constructor(private readonly journal: Journal) {}

  @DelayConsumer('pet-feeding')
  async onHungry(meal: Meal): Promise<void> {
    this.journal.write(`hungry ${meal.petId}`);
    await this.feeding.schedule(meal, { id: `hungry:${meal.petId}`, delayMs: 4 * HOUR });
  }
}

/** The same handler reporting into a FixedQueue instead, read by a batch consumer. */
@Injectable()
class Reporting {
  feeding!: DelayQueue<Meal>;
  events!: FixedQueue<Meal>;
  /** Schedules the next meal too, and does what else a handler does: counts, moves, cancels, other I/O. */
  everything = false;

  constructor(private readonly journal: Journal) {}

  @DelayConsumer('pet-feeding')
  async onHungry(meal: Meal): Promise<void> {
    this.journal.write(`hungry ${meal.petId}`);
    await this.events.push(meal.petId, meal);
    if (!this.everything) return;
    await this.events.pushMany(meal.petId, [meal, meal]);
    await this.feeding.schedule(meal, { id: `hungry:${meal.petId}`, delayMs: 4 * HOUR });
    await this.feeding.schedule({ petId: 'vet' }, { id: 'vet', delayMs: HOUR });
    await this.feeding.reschedule('vet', { delayMs: 2 * HOUR });
    await this.feeding.cancel('vet');
    const [delays, fixed] = await Promise.all([this.feeding.stats(), this.events.stats(), stat('.')]);
    this.journal.write(`stats ${delays.active} ${fixed.pending}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }

  @BatchConsumer('game-events')
  report(events: Meal[]): void {
    this.journal.write(`reported ${events.map(({ petId }) => petId).join(',')}`);
  }
}

/** A recurring job that schedules a follow-up, and a batch consumer that does too. */
@Injectable()
class Rounds {
  feeding!: DelayQueue<Meal>;

  constructor(private readonly journal: Journal) {}

  @Recurring({ name: 'rounds', everyMs: HOUR })
  async round(ctx: RecurringContext): Promise<void> {
    this.journal.write(`round ${ctx.firedAt % (24 * HOUR)}`);
    await this.feeding.schedule({ petId: 'after-round' }, { id: `after:${ctx.firedAt}`, delayMs: HOUR / 2 });
  }

  @BatchConsumer('game-events')
  async report(events: Meal[]): Promise<void> {
    this.journal.write(`reported ${events.length}`);
    await this.feeding.schedule(events[0], { id: `after:${events[0].petId}`, delayMs: HOUR });
  }

  @DelayConsumer('pet-feeding')
  onFollowUp(meal: Meal): void {
    this.journal.write(`follow-up ${meal.petId}`);
  }
}

const runs = Array.from({ length: RUNS }, (_, run) => run);
let app: INestApplication;
let clock: QueueClock;
let journal: Journal;
let feeding: DelayQueue<Meal>;
let events: FixedQueue<Meal>;

/** One application for a case's runs: the runs follow each other on its clock, as a suite's tests would. */
function withApp(consumers: Type<object>, prepare?: () => Promise<void>): void {
  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        QueueModule.forRoot({ connection: 'memory://' }),
        QueueModule.registerDelayQueue({ name: 'pet-feeding' }),
        QueueModule.registerFixedQueue({ name: 'game-events', maxWaitMs: 1000 }),
      ],
      providers: [Journal, consumers],
    }).compile();
    app = await moduleRef.createNestApplication({ logger: false }).init();
    clock = app.get(QueueClock);
    journal = app.get(Journal);
    journal.clock = clock;
    feeding = app.get(getDelayQueueToken('pet-feeding'));
    events = app.get(getFixedQueueToken('game-events'));
    Object.assign(app.get(consumers), { feeding, events });
    await prepare?.();
    // Building the application is not what is measured: on a loaded machine the first one (Nest's own
    // modules loading) can take seconds.
  }, 60_000);
  afterAll(() => app.close());
}

describe("the testing page's example: the handler schedules the next meal", () => {
  withApp(Pets);

  it.each(runs)('run %i: hungry 4 hours after a meal, 2 sooner with a card, then every 4 hours', async () => {
    const fedAt = clock.nowSync();
    await feeding.schedule({ petId: 'milo' }, { id: 'hungry:milo', delayMs: 4 * HOUR });
    await clock.advance(4 * HOUR - 1);
    expect(journal.take()).toEqual([]);
    await clock.advance(1);
    expect(journal.take()).toEqual([`${fedAt + 4 * HOUR} hungry milo`]);
    // An acceleration card: the meal the handler scheduled comes 2 hours sooner.
    await feeding.shift('hungry:milo', -2 * HOUR);
    await clock.advance(2 * HOUR);
    expect(journal.take()).toEqual([`${fedAt + 6 * HOUR} hungry milo`]);
    await clock.advance(8 * HOUR);
    expect(journal.take()).toEqual([`${fedAt + 10 * HOUR} hungry milo`, `${fedAt + 14 * HOUR} hungry milo`]);
    expect(await feeding.cancel('hungry:milo')).toBe(true);
  });
});

describe('a handler that pushes to a FixedQueue', () => {
  withApp(Reporting);

  it.each(runs)('run %i: the push is reported a second later, within the same advance', async () => {
    const fedAt = clock.nowSync();
    await feeding.schedule({ petId: 'milo' }, { id: 'hungry:milo', delayMs: HOUR });
    await clock.advance(2 * HOUR);
    expect(journal.take()).toEqual([`${fedAt + HOUR} hungry milo`, `${fedAt + HOUR + 1000} reported milo`]);
  });
});

describe('a handler that schedules, pushes, counts, moves, cancels and awaits other I/O', () => {
  let dueAt: number;
  withApp(Reporting, async () => {
    app.get(Reporting).everything = true;
    dueAt = (await feeding.schedule({ petId: 'milo' }, { id: 'hungry:milo', delayMs: 4 * HOUR })).runAt;
  });

  it.each(runs)('run %i: each meal schedules the next, its pushes are reported a second later', async () => {
    await clock.advance(dueAt - clock.nowSync());
    expect(journal.take()).toEqual([`${dueAt} hungry milo`, `${dueAt} stats 1 3`]);
    await clock.advance(1000);
    expect(journal.take()).toEqual([`${dueAt + 1000} reported milo,milo,milo`]);
    dueAt += 4 * HOUR;
  });
});

describe('a @Recurring job that schedules, and a @BatchConsumer that schedules', () => {
  // From a whole hour, so that the rounds (on multiples of everyMs) fall at known times.
  withApp(Rounds, async () => {
    await clock.advance(HOUR - (clock.nowSync() % HOUR));
    journal.take();
  });

  it.each(runs)('run %i: each round and each batch has its follow-up', async (run) => {
    const hour = clock.nowSync();
    await events.push(`game-${run}`, { petId: `game-${run}` });
    await clock.advance(HOUR);
    // The round that began this run scheduled its follow-up half an hour on.
    expect(journal.take()).toEqual([
      `${hour + 1000} reported 1`,
      `${hour + HOUR / 2} follow-up after-round`,
      `${hour + HOUR} round ${(hour + HOUR) % (24 * HOUR)}`,
    ]);
    await clock.advance(HOUR / 2);
    expect(journal.take()).toEqual([
      `${hour + HOUR + 1000} follow-up game-${run}`,
      `${hour + HOUR + HOUR / 2} follow-up after-round`,
    ]);
    await clock.advance(HOUR / 2);
    expect(journal.take()).toEqual([`${hour + 2 * HOUR} round ${(hour + 2 * HOUR) % (24 * HOUR)}`]);
  });
});
