import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { startRedis, type RedisServer } from '@test/support/faults';
import { pollUntil, resolves } from '@test/support/testing';

const batches = recordBatches<{ n: number }>('reports');
const tasks = recordTasks<{ n: number }>('timers');

describe('a paused queue and a Redis restart without persistence', () => {
  const harness = useQueueApps();
  let server: RedisServer | undefined;

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('comes back unpaused, and its consumers work without being told', async () => {
    server = await startRedis();
    const { port, url } = server;
    const queues = await harness.start({
      connection: url,
      root: { idlePollMs: 100 },
      fixed: [{ name: 'reports', shards: 2, maxWaitMs: 20 }],
      delay: [{ name: 'timers', shards: 2 }],
      providers: [batches.consumer, tasks.consumer],
    });
    const fixed = queues.fixed<{ n: number }>('reports');
    const delay = queues.delay<{ n: number }>('timers');
    await fixed.pause();
    await delay.pause();
    await fixed.push('g', { n: 1 });
    await delay.schedule({ n: 1 }, { id: 'before' });
    expect(await fixed.isPaused()).toBe(true);

    await server.stop();
    server = await startRedis({ port });
    await pollUntil(() => resolves(() => fixed.size('g')), 'Redis to answer again');

    // The data went with the restart, the pause too: what is written now is delivered.
    expect(await fixed.isPaused()).toBe(false);
    expect(await delay.isPaused()).toBe(false);
    await fixed.push('g', { n: 2 });
    await delay.schedule({ n: 2 }, { id: 'after' });
    await batches.untilMessages(1);
    await tasks.untilTasks(1);
    expect(batches.messages()).toEqual([{ n: 2 }]);
    expect(tasks.ids()).toEqual(['after']);
  });
});
