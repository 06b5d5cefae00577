// A small Nest application that uses nestjs-redis-queues as an installed package and checks that
// what it does arrives: compiled unchanged as CommonJS (Nest 11, on ioredis 5 and 6) and as an ES
// module (Nest 12) by `npm run compat`. COMPAT_CONNECTION=client hands the module an ioredis client of
// the application's own instead of a URL. Then it starts the README's Example as it is (compat writes
// it to src/app.module.ts) and uses it. Exits 0 when every check passed, 1 with the reason otherwise.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { IsInt, IsString, Min } from 'class-validator';
import { Redis } from 'ioredis';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  type DelayContext,
  DelayQueue,
  FixedQueue,
  InjectDelayQueue,
  InjectFixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueInputError,
  QueueModule,
  QueueSchemaError,
} from 'nestjs-redis-queues';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = process.env.COMPAT_PREFIX ?? `compat-${process.pid}`;
const TIMEOUT_MS = 20_000;
// The application's own client: the module uses it as it is and never closes it.
const OWN_CLIENT = process.env.COMPAT_CONNECTION === 'client' ? new Redis(REDIS_URL) : undefined;

class Score {
  @IsString() player!: string;
  @IsInt() @Min(0) points!: number;
}

class Reminder {
  @IsString() text!: string;
}

interface Received<T, C> {
  promise: Promise<{ items: T; ctx: C }>;
  resolve(value: { items: T; ctx: C }): void;
}

function received<T, C>(): Received<T, C> {
  let resolve!: Received<T, C>['resolve'];
  const promise = new Promise<{ items: T; ctx: C }>((r) => (resolve = r));
  return { promise, resolve };
}

@Injectable()
class Consumers {
  readonly batch = received<Score[], BatchContext>();
  readonly digest = received<Score[], BatchContext>();
  readonly task = received<Reminder, DelayContext>();

  @BatchConsumer('scores')
  onScores(scores: Score[], ctx: BatchContext): void {
    this.batch.resolve({ items: scores, ctx });
  }

  // Scheduled mode goes through @nestjs/schedule, which the library loads from the application.
  @BatchConsumer('digest', { cron: '* * * * * *', name: 'compat-digest' })
  onDigest(scores: Score[], ctx: BatchContext): void {
    this.digest.resolve({ items: scores, ctx });
  }

  @DelayConsumer('reminders')
  onReminder(reminder: Reminder, ctx: DelayContext): void {
    this.task.resolve({ items: reminder, ctx });
  }
}

@Injectable()
class Producer {
  constructor(
    @InjectFixedQueue('scores') readonly scores: FixedQueue<Score>,
    @InjectFixedQueue('digest') readonly digest: FixedQueue<Score>,
    @InjectDelayQueue('reminders') readonly reminders: DelayQueue<Reminder>,
  ) {}
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    QueueModule.forRoot({ connection: OWN_CLIENT ?? REDIS_URL, prefix: PREFIX }),
    QueueModule.registerFixedQueue({ name: 'scores', capacity: 100, batchSize: 10, maxWaitMs: 100, schema: Score }),
    QueueModule.registerFixedQueue({ name: 'digest', capacity: 100, batchSize: 10, maxWaitMs: 100 }),
    QueueModule.registerDelayQueue({ name: 'reminders', visibilityTimeoutMs: 5_000, schema: Reminder }),
  ],
  providers: [Producer, Consumers],
})
class AppModule {}

function check(condition: unknown, what: string, actual?: unknown): void {
  if (!condition) throw new Error(`${what}${actual === undefined ? '' : ` (got ${JSON.stringify(actual)})`}`);
}

function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function pollUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function run(producer: Producer, consumers: Consumers, scheduler: SchedulerRegistry): Promise<void> {
  // Bad input: a typed error, thrown before anything is written.
  let refused: unknown;
  try {
    await producer.scores.push('table-1', { player: 'ann', points: -1 });
  } catch (error) {
    refused = error;
  }
  check(
    refused instanceof QueueSchemaError && refused instanceof QueueInputError,
    'an invalid score is refused with QueueSchemaError',
    String(refused),
  );
  check((await producer.scores.size('table-1')) === 0, 'a refused score writes nothing');

  const sent: Score[] = [
    { player: 'ann', points: 3 },
    { player: 'bob', points: 5 },
    { player: 'cat', points: 8 },
  ];
  await producer.scores.pushMany('table-1', sent);
  const batch = await within(consumers.batch.promise, '@BatchConsumer receiving a batch');
  check(
    batch.ctx.queue === 'scores' && batch.ctx.group === 'table-1',
    'the batch is of queue scores, group table-1',
    batch.ctx,
  );
  check(
    JSON.stringify(batch.items) === JSON.stringify(sent),
    'the batch holds the pushed scores in order',
    batch.items,
  );
  const stats = await producer.scores.stats();
  check(
    stats.pushed === 3 && stats.delivered === 3 && stats.pending === 0,
    'stats count 3 pushed and delivered, none pending',
    stats,
  );

  await producer.digest.push('daily', { player: 'dan', points: 1 });
  const digest = await within(consumers.digest.promise, 'the cron @BatchConsumer draining its queue');
  check(digest.ctx.group === 'daily' && digest.items.length === 1, 'the cron consumer got the digest message', digest);
  // The library registers its cron job in the application's own SchedulerRegistry, not in a second copy.
  check(scheduler.getCronJob('compat-digest'), "the cron job is in the application's SchedulerRegistry");

  // Scheduled far away, then moved to now-ish: only the move can make it fire in time.
  await producer.reminders.schedule({ text: 'stretch' }, { id: 'reminder-1', delayMs: 3_600_000 });
  const moved = await producer.reminders.reschedule('reminder-1', { delayMs: 200 });
  check(moved?.id === 'reminder-1', 'reschedule finds the task', moved);
  const task = await within(consumers.task.promise, '@DelayConsumer receiving the task');
  check(task.ctx.id === 'reminder-1' && task.ctx.attempt === 1, 'the task is reminder-1, first attempt', task.ctx);
  check(task.items.text === 'stretch', 'the task carries its payload', task.items);
  check(
    task.ctx.firedAt >= task.ctx.runAt && task.ctx.runAt === moved!.runAt,
    'the task fired at its new time, not before',
    task.ctx,
  );
  await pollUntil(
    () => producer.reminders.get('reminder-1'),
    (state) => state === null,
    'the handled task being acknowledged',
  );
}

// The README's Example starts against Redis as written (its options pass validation, its consumers
// start) and does what its comments say. Every compat application runs it on the same server under the
// Example's prefix, so the group and the pet are this run's own.
async function runExample(): Promise<void> {
  const { AppModule: ExampleModule, Tracker } = await import('./app.module.js');
  const app = await NestFactory.createApplicationContext(ExampleModule, { logger: ['error', 'warn'] });
  try {
    const tracker = app.get(Tracker);
    const events = app.get<FixedQueue<unknown>>(getFixedQueueToken('game-events'));
    const feeding = app.get<DelayQueue<unknown>>(getDelayQueueToken('pet-feeding'));
    const game = `${PREFIX}-game`;
    await tracker.track(game, { type: 'kill', at: 1 });
    await pollUntil(
      () => events.size(game),
      (size) => size === 0,
      "the Example's consumer taking and acknowledging the event",
    );
    const pet = `${PREFIX}-milo`;
    const fed = await tracker.feed(pet);
    check(fed.id === `hungry:${pet}`, 'the Example schedules under the pet id', fed);
    const moved = await tracker.accelerate(pet);
    check(moved?.runAt === fed.runAt - 2 * 3600_000, 'accelerate moves the task 2 h earlier', { fed, moved });
    check((await feeding.get(fed.id))?.state === 'scheduled', 'the moved task is still scheduled');
    check(await feeding.cancel(fed.id), 'the task is cancelled');
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  try {
    await run(app.get(Producer), app.get(Consumers), app.get(SchedulerRegistry));
  } finally {
    await app.close();
  }
  if (OWN_CLIENT) {
    check(OWN_CLIENT.status === 'ready', "the application's own client is left open by app.close()", OWN_CLIENT.status);
    await OWN_CLIENT.quit();
  } else {
    await runExample();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`compat check failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
