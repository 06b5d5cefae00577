import { Injectable } from '@nestjs/common';
import { QueueEvents, Recurring, type QueueDataLostEvent } from 'nestjs-redis-queues';
import { RecurringMounter } from '../../libs/queue/src/recurring/recurring-mounter';
import { startRedis, type RedisServer } from '@test/support/faults';
import { useQueueApps, type QueueApp } from '@test/support/fixtures';
import { deferred, pollUntil } from '@test/support/testing';

@Injectable()
class Tick {
  @Recurring({ everyMs: 60_000, name: 'tick' })
  tick() {}
}

/** Long enough for a check that runs at once; far shorter than the 15 s between periodic checks of the records. */
const AT_ONCE_MS = 3_000;

/**
 * A process checks its queues' records every few rounds of what it declares, and at once when its
 * connection is ready again. Each test holds one kind of round in flight, restarts Redis empty under it,
 * and expects the losses found while that round is still held.
 */
describe('A reconnection checks every queue record, whatever round is in flight', () => {
  const harness = useQueueApps();
  let server: RedisServer;
  let started: QueueApp;
  const lost: QueueDataLostEvent[] = [];
  const held: { release: () => void }[] = [];

  beforeEach(async () => {
    server = await startRedis();
    started = await harness.start({
      connection: server.url,
      root: { idlePollMs: 60_000, commandTimeoutMs: 1000 },
      fixed: [{ name: 'games' }],
      delay: [{ name: 'pets' }],
      providers: [Tick],
    });
    started.app.get(QueueEvents).on('queue.data-lost', (event) => lost.push(event));
  });

  afterEach(async () => {
    for (const hold of held.splice(0)) hold.release();
    lost.length = 0;
    await server.stop();
  });

  /** Holds the next call of `target[method]` (after it ran, when `first` says so) until released. */
  function holdNext<T extends object, K extends keyof T & string>(target: T, method: K, first: 'run' | 'wait') {
    const original = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
    const entered = deferred();
    const gate = deferred();
    jest.spyOn(target, method as never).mockImplementationOnce((async (...args: unknown[]) => {
      const result = first === 'run' ? await original(...args) : undefined;
      entered.resolve();
      await gate.promise;
      return first === 'run' ? result : original(...args);
    }) as never);
    held.push({ release: () => gate.resolve() });
    return entered.promise;
  }

  async function restartEmpty(): Promise<void> {
    const { port } = server;
    await server.kill('SIGKILL');
    server = await startRedis({ port });
  }

  const found = (queue: string) => lost.filter((event) => event.queue === queue).length;

  it('during a round of the @Recurring declarations only', async () => {
    await holdNext(started.app.get(RecurringMounter), 'redeclare', 'wait');
    await restartEmpty();
    await pollUntil(() => found('games') === 1 && found('pets') === 1, 'both losses found', AT_ONCE_MS);
  });

  it('during a periodic round of the records, which read them before the restart', async () => {
    // Held once it has read the last record (the queues are checked in the order they were registered).
    await holdNext(started.delay('pets').record, 'restore', 'run');
    await restartEmpty();
    await pollUntil(() => found('games') === 1 && found('pets') === 1, 'both losses found', AT_ONCE_MS);
  });

  it('during the check of an earlier reconnection', async () => {
    // Taken by the reconnection's check, before it reads the last record: the first periodic round
    // comes 3 s after start-up.
    const entered = holdNext(started.delay('pets').record, 'restore', 'wait');
    await restartEmpty();
    await entered;
    expect(found('games')).toBe(1);
    await restartEmpty();
    await pollUntil(() => found('games') === 2 && found('pets') === 1, 'the second losses found', AT_ONCE_MS);
  });
});

describe("A FixedQueue whose name begins as a @Recurring schedule's queue's does", () => {
  const harness = useQueueApps();
  let server: RedisServer;

  afterEach(async () => {
    await server.stop();
  });

  it('report the loss of its data like any other queue', async () => {
    server = await startRedis();
    const started = await harness.start({
      connection: server.url,
      root: { idlePollMs: 60_000, commandTimeoutMs: 1000 },
      fixed: [{ name: 'recurring.x' }, { name: 'games' }],
    });
    const lost: QueueDataLostEvent[] = [];
    started.app.get(QueueEvents).on('queue.data-lost', (event) => lost.push(event));
    const { port } = server;
    await server.kill('SIGKILL');
    server = await startRedis({ port });
    await pollUntil(() => lost.length === 2, 'both losses found', AT_ONCE_MS);
    expect(lost.map((event) => event.queue).sort()).toEqual(['games', 'recurring.x']);
    expect(await started.fixed('recurring.x').acknowledgeDataLoss()).toBe(true);
  });
});
