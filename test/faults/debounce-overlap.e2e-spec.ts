import { setTimeout as delay } from 'node:timers/promises';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';
import { useWorkerProcesses } from '@test/support/worker-processes';

/**
 * A debounced stream faster than its handler, consumed by two processes with one slot each: a schedule
 * that replaces the running task must not start a second run of its id in the other process.
 */
describe('DelayQueue debounce with a handler slower than the window, two consumer processes', () => {
  const harness = useQueueApps();
  const workers = useWorkerProcesses();

  it('never runs two runs of the id at once, and every fired run completes', async () => {
    const prefix = harness.prefix();
    const logKey = `${prefix}:log`;
    const env = workers.env({ PREFIX: prefix, LOG_KEY: logKey });
    await Promise.all([workers.spawn('debounce-worker.js', env), workers.spawn('debounce-worker.js', env)]);
    const producer = await harness.start({
      prefix,
      root: { consumers: false },
      delay: [{ name: 'digests', shards: 2 }],
    });
    const queue = producer.delay<{ n: number }>('digests');

    let n = 0;
    // Fires at maxWaitMs, again at twice it while the first run (1.5 s) still runs, and last after the stream.
    for (const end = Date.now() + 2_250; Date.now() < end; await delay(100))
      await queue.schedule({ n: ++n }, { id: 'digest', delayMs: 300, debounce: { maxWaitMs: 1_000 } });
    await pollUntil(async () => (await queue.get('digest')) === null, 'the last version run', 30_000);
    const entries = (await harness.redis.lrange(logKey, 0, -1)).map((line) => {
      const [what, payload, at] = line.split('|');
      return { what, n: Number(payload), at: Number(at) };
    });
    await harness.redis.del(logKey);

    // Runs at once, from the log in time order (an end before a start at the same millisecond).
    let running = 0;
    let most = 0;
    for (const { what } of [...entries].sort((a, b) => a.at - b.at || (a.what === 'end' ? -1 : 1))) {
      running += what === 'start' ? 1 : -1;
      most = Math.max(most, running);
    }
    const starts = entries.filter(({ what }) => what === 'start');
    expect(most).toBe(1);
    expect(starts.length).toBeGreaterThanOrEqual(2);
    expect(entries.filter(({ what }) => what === 'end')).toHaveLength(starts.length);
    expect(starts.at(-1)!.n).toBe(n);
    expect(await queue.stats()).toMatchObject({ fired: starts.length, completed: starts.length, deadTotal: 0 });
  });
});
