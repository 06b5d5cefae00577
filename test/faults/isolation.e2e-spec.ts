import { QueueInputError } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { dumpsMatching, pollUntil, rawClient, uniquePrefix } from '@test/support/testing';
import { delayQueueViolations, fixedQueueViolations } from '@test/support/invariants';

/** Names that look like key syntax, separators or nothing at all. */
const HOSTILE = [
  '{q2:0}:ready',
  'a}b{c',
  '}',
  '{',
  'x:y:z',
  ' spaced  out ',
  '*',
  '\\',
  'üñíçødé 漢字 🦄',
  'nul\u0000inside',
  '\u0000',
  '\r\n',
  'x'.repeat(512),
];
const PAYLOAD = { text: 'a}b{c:\u0000 🦄 \\"quoted"', nested: ['{q2:0}:data', '\u0000'], n: 1.5 };

describe('hostile names and payloads; prefixes and queues kept apart', () => {
  const harness = useQueueApps({ client: rawClient });

  /** An application whose consumers record what they get: what another application consumed never shows. */
  async function boot(prefix: string, label: string, shards = 4) {
    const batches = recordBatches('q1', { concurrency: 2 });
    const tasks = recordTasks('t1', { concurrency: 4 });
    const app = await harness.start({
      prefix,
      root: { idlePollMs: 200 },
      fixed: [
        { name: 'q1', shards, batchSize: 100, maxWaitMs: 20 },
        { name: 'q2', shards, batchSize: 100, maxWaitMs: 20 },
      ],
      delay: [
        { name: 't1', shards },
        { name: 't2', shards },
      ],
      providers: [batches.consumer, tasks.consumer],
    });
    return {
      seen: {
        label,
        get batches() {
          return batches.batches.map(({ group, messages }) => ({ group, messages }));
        },
        get tasks() {
          return tasks.tasks.map(({ id, payload }) => ({ id, payload }));
        },
      },
      q1: app.fixed('q1'),
      q2: app.fixed('q2'),
      t1: app.delay('t1'),
      t2: app.delay('t2'),
    };
  }

  const snapshot = (match: string) => dumpsMatching(harness.redis, match);

  it('stores and delivers hostile group names, ids and payloads exactly, touching only their own queue', async () => {
    const prefix = uniquePrefix();
    const { seen, q1, q2, t1, t2 } = await boot(prefix, 'A');
    // Neighbours holding data that hostile names might reach for.
    await q2.push('victim', { keep: true });
    await t2.schedule({ keep: true }, { id: 'victim', delayMs: 3_600_000 });
    const before = await snapshot(`${prefix}:{q2*`);
    const beforeTasks = await snapshot(`${prefix}:{t2*`);

    for (const name of HOSTILE) {
      await q1.pushMany(name, [PAYLOAD, name]);
      await t1.schedule({ ...PAYLOAD, name }, { id: name });
    }
    await pollUntil(
      () =>
        seen.tasks.length === HOSTILE.length &&
        seen.batches.reduce((n, b) => n + b.messages.length, 0) === 2 * HOSTILE.length,
      'every message and task',
    );
    for (const name of HOSTILE) {
      expect(seen.batches.filter((b) => b.group === name).flatMap((b) => b.messages)).toEqual([PAYLOAD, name]);
      expect(seen.tasks.filter((t) => t.id === name).map((t) => t.payload)).toEqual([{ ...PAYLOAD, name }]);
    }
    await pollUntil(async () => (await t1.stats()).completed === HOSTILE.length, 'acknowledgements');

    expect(await snapshot(`${prefix}:{q2*`)).toEqual(before);
    expect(await snapshot(`${prefix}:{t2*`)).toEqual(beforeTasks);
    // Every key of q1 and t1 carries its own shard's hash tag: one Cluster slot per shard, whatever the name.
    // (Beside the processes' announcements, one hash of the prefix's own.)
    for (const key of await harness.redis.keys(`${prefix}:*`)) {
      if (key === `${prefix}:{processes}:announced`) continue;
      const tag = key.slice(key.indexOf('{') + 1, key.indexOf('}'));
      expect(tag).toMatch(/^(q1|q2|t1|t2)(:\d+)?$/);
      expect(key.startsWith(`${prefix}:{${tag}}:`)).toBe(true);
    }
    expect(await fixedQueueViolations(harness.redis, { prefix, name: 'q1', shards: 4, capacity: 1000 })).toEqual([]);
    expect(await delayQueueViolations(harness.redis, { prefix, name: 't1', shards: 4 })).toEqual([]);
  });

  it('refuses names it cannot store, before writing anything', async () => {
    const prefix = uniquePrefix();
    const { q1, t1 } = await boot(prefix, 'A', 1);
    const before = await harness.redis.keys(`${prefix}:*`);
    for (const name of ['', 'x'.repeat(513), 'é'.repeat(257)]) {
      await expect(Promise.resolve().then(() => q1.push(name, 1))).rejects.toThrow(QueueInputError);
      await expect(t1.schedule(1, { id: name })).rejects.toThrow(QueueInputError);
    }
    expect((await harness.redis.keys(`${prefix}:*`)).sort()).toEqual(before.sort());
  });

  // Redis keys are UTF-8, and a lone UTF-16 surrogate has no UTF-8 form: it would be written as U+FFFD
  // and distinct names would collide (one task silently replacing another). Such names are refused.
  it('refuses names with lone surrogates instead of letting them collide', async () => {
    const { t1, q1 } = await boot(uniquePrefix(), 'A', 1);
    await expect(t1.schedule('first', { id: 'x\ud800', delayMs: 60_000 })).rejects.toThrow(QueueInputError);
    await expect(q1.push('g\udbff', 1)).rejects.toThrow(/lone UTF-16 surrogate/);
    expect(await t1.get('x\ud800').catch((error: unknown) => error)).toBeInstanceOf(QueueInputError);
  });

  it('keeps two applications with different prefixes on one Redis apart', async () => {
    const base = uniquePrefix();
    // One prefix is the start of the other: keys must still never be shared.
    const a = await boot(base, 'A');
    const b = await boot(`${base}-b`, 'B');
    for (const app of [a, b]) {
      await app.q1.pushMany('same-group', [app.seen.label, app.seen.label]);
      await app.t1.schedule({ from: app.seen.label }, { id: 'same-id' });
      await app.t2.schedule({ from: app.seen.label }, { id: 'later', delayMs: 3_600_000 });
    }
    await pollUntil(
      () => [a, b].every((app) => app.seen.tasks.length === 1 && app.seen.batches.length === 1),
      'both applications to consume',
    );
    for (const app of [a, b]) {
      expect(app.seen.batches).toEqual([{ group: 'same-group', messages: [app.seen.label, app.seen.label] }]);
      expect(app.seen.tasks).toEqual([{ id: 'same-id', payload: { from: app.seen.label } }]);
      expect((await app.t2.get('later'))?.payload).toEqual({ from: app.seen.label });
      expect(await app.q1.stats()).toMatchObject({ pushed: 2, delivered: 2 });
      expect(await app.t1.stats()).toMatchObject({ scheduledTotal: 1, fired: 1 });
    }
    expect(await a.t2.cancel('later')).toBe(true);
    expect((await b.t2.get('later'))?.payload).toEqual({ from: 'B' });
    const keysOfA = await harness.redis.keys(`${base}:*`);
    expect(keysOfA.length).toBeGreaterThan(0);
    expect(keysOfA.every((key) => !key.startsWith(`${base}-b:`))).toBe(true);
  });
});
