// The memory engine's speed (connection: 'memory://'), outside `npm run bench` (no Redis, no
// contenders): script calls per second through a producer's calls, and QueueClock.advance over a
// simulated day of a recurring task every second (QueueClock warns past 1000 occurrences: expected here).
// Run: npm run bench:memory [-- --seconds N --hours H]
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  type DelayQueue,
  getDelayQueueToken,
  QueueClock,
  QueueModule,
  Recurring,
  type RecurringContext,
} from 'nestjs-redis-queues';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const SECONDS = arg('seconds', 5);
const HOURS = arg('hours', 24);
const IN_FLIGHT = 256;

@Injectable()
class Ticks {
  runs = 0;

  @Recurring({ name: 'every-second', everyMs: 1000 })
  tick(_ctx: RecurringContext): void {
    this.runs++;
  }
}

async function app(providers: (typeof Ticks)[]) {
  @Module({
    imports: [QueueModule.forRoot({ connection: 'memory://' }), QueueModule.registerDelayQueue({ name: 'bench' })],
    providers,
  })
  class BenchModule {}
  return NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
}

/** Schedules (one script call each) kept IN_FLIGHT at a time for SECONDS: calls per second. */
async function scriptCalls(): Promise<number> {
  const context = await app([]);
  await context.init();
  const queue = context.get<DelayQueue<{ n: number }>>(getDelayQueueToken('bench'));
  let calls = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      for (let n = lane; performance.now() < until; n += IN_FLIGHT) {
        await queue.schedule({ n }, { id: `task-${n}`, delayMs: 3600_000 });
        calls++;
      }
    }),
  );
  await context.close();
  return calls / SECONDS;
}

/** QueueClock.advance over HOURS of a @Recurring every second: wall time, and the runs it made. */
async function advanceDay(): Promise<{ wallMs: number; runs: number }> {
  const context = await app([Ticks]);
  await context.init();
  const clock = context.get(QueueClock);
  const started = performance.now();
  await clock.advance(HOURS * 3600_000);
  const wallMs = performance.now() - started;
  const runs = context.get(Ticks).runs;
  await context.close();
  return { wallMs, runs };
}

async function main(): Promise<void> {
  if (SECONDS > 0) {
    const rate = await scriptCalls();
    console.log(
      `memory engine: ${Math.round(rate)} script calls/s (DelayQueue.schedule, ${IN_FLIGHT} in flight, ${SECONDS} s)`,
    );
  }
  const { wallMs, runs } = await advanceDay();
  console.log(
    `QueueClock.advance(${HOURS} h) of @Recurring every 1 s: ${(wallMs / 1000).toFixed(1)} s wall, ${runs} runs`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
