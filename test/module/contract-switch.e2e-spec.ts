import { QueueEvents, QueueProcesses, type QueueEventMap } from 'nestjs-redis-queues';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

// A version whose data contract (3) is newer than one it still serves (2): what the next release that
// changes what 0.2.0 reads will be. Beside a live process of contract 2 it keeps to 2; once that process
// has not been seen for a lease it moves to 3 by itself, and says so.
jest.mock('../../libs/queue/src/redis/data-contract', () => ({ DATA_CONTRACT: 3, SERVES_FROM: 2 }));

describe('the data contract kept to during a rollout', () => {
  const harness = useQueueApps();

  /** A process of the earlier contract, as it announces itself, last seen `ageMs` ago. */
  async function earlierProcess(prefix: string, ageMs: number): Promise<void> {
    const [seconds, micros] = await harness.redis.time();
    const seenAt = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - ageMs;
    await harness.redis.hset(`${prefix}:{processes}:announced`, 'old-host:7:aaaaaa', `0.2.9|2|2|${seenAt}|${seenAt}`);
  }

  it('keeps to a live earlier contract, then switches by itself once its last process lapsed', async () => {
    const prefix = harness.prefix();
    // Seen 12 s ago: it lapses (15 s) within seconds, and announces nothing more.
    await earlierProcess(prefix, 12_000);
    const { app } = await harness.start({ prefix, fixed: [{ name: 'events' }] });
    const processes = app.get(QueueProcesses);
    const changes: QueueEventMap['processes.contract-changed'][] = [];
    app.get(QueueEvents).on('processes.contract-changed', (event) => void changes.push(event));
    expect(processes.contract).toBe(2);
    expect(processes.versions()).toMatchObject({ '0.2.9': 1 });

    await pollUntil(() => processes.contract === 3, 'the switch to contract 3', 15_000);
    expect(changes).toEqual([{ from: 2, to: 3, versions: { [processes.version]: 1 } }]);
  });

  it('starts on its own contract when no earlier process is live, and a pinned one stays', async () => {
    const { app } = await harness.start({ fixed: [{ name: 'events' }] });
    expect(app.get(QueueProcesses).contract).toBe(3);
    const pinned = await harness.start({ root: { dataContract: 2 }, fixed: [{ name: 'events' }] });
    expect(pinned.app.get(QueueProcesses).contract).toBe(2);
  });
});
