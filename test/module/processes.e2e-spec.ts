import { QueueConfigError, QueueHealthIndicator, QueueProcesses } from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';

// Each process announces its library version and data contract under the prefix (docs/upgrading.md):
// what health, the dashboard and /metrics show during a deploy, and how a process refuses to start
// beside one it cannot work with. A process of another version is written here as it would announce
// itself: its field in the prefix's processes hash, stamped with Redis' time.
describe('QueueProcesses: who shares the prefix', () => {
  const harness = useQueueApps();
  const { version } = require('../../libs/queue/package.json') as { version: string };

  const processesKey = (prefix: string) => `${prefix}:{processes}:announced`;
  async function redisNow(): Promise<number> {
    const [seconds, micros] = await harness.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }
  /** Another process' announcement: `version|contract|serves|startedAt|seenAt`. */
  async function announceOther(
    prefix: string,
    other: { version: string; contract: number; serves: number; ageMs?: number },
  ) {
    const seenAt = (await redisNow()) - (other.ageMs ?? 0);
    await harness.redis.hset(
      processesKey(prefix),
      'other-host:42:abcdef',
      `${other.version}|${other.contract}|${other.serves}|${seenAt}|${seenAt}`,
    );
  }

  it('lists every live process with its version, in each of them, and in health', async () => {
    const first = await harness.start({ fixed: [{ name: 'events' }] });
    const second = await harness.start({ prefix: first.prefix, fixed: [{ name: 'events' }] });
    const mine = second.app.get(QueueProcesses);
    expect(mine.version).toBe(version);
    expect(mine.contract).toBe(2);
    expect(mine.list()).toHaveLength(2);
    expect(mine.versions()).toEqual({ [version]: 2 });
    // The first process read the hash before the second arrived; its next announcement shows both.
    await pollUntil(() => first.app.get(QueueProcesses).list().length === 2, 'the first process to see the second');
    const health = await second.app.get(QueueHealthIndicator).isHealthy('queues');
    expect(health.queues.processes).toEqual({ versions: { [version]: 2 }, dataContract: 2 });
  });

  it('deletes its entry when it closes, and prunes the entry of a process gone past its lease', async () => {
    const prefix = harness.prefix();
    await announceOther(prefix, { version: '0.1.9', contract: 2, serves: 2, ageMs: 60_000 });
    const { app } = await harness.start({ prefix, fixed: [{ name: 'events' }] });
    expect(
      app
        .get(QueueProcesses)
        .list()
        .map((entry) => entry.version),
    ).toEqual([version]);
    expect(await harness.redis.hlen(processesKey(prefix))).toBe(1);
    await app.close();
    expect(await harness.redis.hlen(processesKey(prefix))).toBe(0);
  });

  it('refuses to start beside a live process whose data contract it no longer serves, naming both versions', async () => {
    const prefix = harness.prefix();
    await announceOther(prefix, { version: '0.1.5', contract: 1, serves: 1 });
    const starting = harness.start({ prefix, fixed: [{ name: 'events' }], logger: new CapturedLogs() });
    await expect(starting).rejects.toThrow(QueueConfigError);
    await expect(starting).rejects.toThrow(
      `runs nestjs-redis-queues 0.1.5 (data contract 1) under the prefix "${prefix}", and this process runs ${version} (data contract 2)`,
    );
    await expect(starting).rejects.toThrow('Stop the 0.1.5 processes first');
  });

  it('refuses to start beside a live process that no longer works beside this version (a rollback past the rollout)', async () => {
    const prefix = harness.prefix();
    await announceOther(prefix, { version: '9.0.0', contract: 9, serves: 8 });
    const starting = harness.start({ prefix, fixed: [{ name: 'events' }], logger: new CapturedLogs() });
    await expect(starting).rejects.toThrow('Finish the rollout instead of rolling back past it, or deploy 9.0.0 here');
  });

  it('starts beside a live process of a later version that still works beside this one', async () => {
    const prefix = harness.prefix();
    await announceOther(prefix, { version: '0.9.0', contract: 3, serves: 2 });
    const { app } = await harness.start({ prefix, fixed: [{ name: 'events' }] });
    expect(app.get(QueueProcesses).versions()).toEqual({ [version]: 1, '0.9.0': 1 });
    expect(app.get(QueueProcesses).contract).toBe(2);
  });

  it.each([3, 1, 'newest'])('refuses dataContract %p, a contract this version does not speak', async (dataContract) => {
    await expect(
      harness.start({ root: { dataContract: dataContract as number }, fixed: [{ name: 'events' }] }),
    ).rejects.toThrow("dataContract must be 'auto' or a data contract this version speaks: 2 to 2");
  });
});
