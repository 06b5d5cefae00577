import { IsInt } from 'class-validator';
import { type DelayQueue, type FixedQueue, QueueError } from 'nestjs-redis-queues';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { keysMatching } from '@test/support/testing';

class Reading {
  @IsInt()
  value!: number;
}

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

/** Running consumers: obliterate() without force refuses a queue they consume. */
const batches = recordBatches('readings');
const tasks = recordTasks('tasks');

/** A method called with input it refuses: the error it reports must be a rejection. */
type BadCall = [string, () => Promise<unknown>];

/**
 * Every method that returns a promise reports every error by rejecting it, so `q.push(g, m).catch(log)`
 * catches a refused push; and a refused call writes nothing.
 */
describe('promise-returning methods reject on bad input, never throw (real redis-server)', () => {
  const harness = useQueueApps({ scope: 'suite' });
  let fixed: FixedQueue<Reading>;
  let delay: DelayQueue<Reading>;
  let prefix: string;

  beforeAll(async () => {
    const app = await harness.start({
      fixed: [{ name: 'readings', shards: 2, schema: Reading, maxPayloadBytes: 64 }],
      delay: [{ name: 'tasks', shards: 2, schema: Reading, maxPayloadBytes: 64 }],
      providers: [batches.consumer, tasks.consumer],
    });
    fixed = app.fixed('readings');
    delay = app.delay('tasks');
    prefix = app.prefix;
  });

  const any = (value: unknown) => value as never;
  const fixedCalls: BadCall[] = [
    ['push: empty group', () => fixed.push('', { value: 1 })],
    ['push: group not a string', () => fixed.push(any(7), { value: 1 })],
    ['push: schema violation', () => fixed.push('g', any({ value: 'one' }))],
    ['push: not JSON-serialisable', () => fixed.push('g', any(cyclic))],
    ['push: over maxPayloadBytes', () => fixed.push('g', any({ value: 1, pad: 'x'.repeat(100) }))],
    ['pushMany: empty group', () => fixed.pushMany('', [{ value: 1 }])],
    ['pushMany: not an array', () => fixed.pushMany('g', any('messages'))],
    ['pushMany: one message violates the schema', () => fixed.pushMany('g', [{ value: 1 }, any({ value: 'two' })])],
    [
      'pushMany: too many messages',
      () =>
        fixed.pushMany(
          'g',
          Array.from({ length: 4001 }, () => ({ value: 1 })),
        ),
    ],
    ['size: empty group', () => fixed.size('')],
    ['hottestGroups: limit 0', () => fixed.hottestGroups(0)],
    ['deadLetters: limit -1', () => fixed.deadLetters(-1)],
    ['deadLetters: cursor not a string', () => fixed.deadLetters({ cursor: any(5) })],
    ['peek: empty group', () => fixed.peek('')],
    ['peek: limit 0', () => fixed.peek('g', 0)],
    ['groups: limit 0', () => fixed.groups({ limit: 0 })],
    ['groups: an unknown option', () => fixed.groups(any({ limt: 10 }))],
    ['groups: a cursor it never returned', () => fixed.groups({ cursor: 'nonsense' })],
    ['requeue: empty id', () => fixed.requeue('')],
    ['clear: empty group', () => fixed.clear('')],
    ['obliterate: consumers running', () => fixed.obliterate()],
  ];
  const delayCalls: BadCall[] = [
    ['schedule: empty id', () => delay.schedule({ value: 1 }, { id: '' })],
    ['schedule: schema violation', () => delay.schedule(any({ value: 'one' }))],
    ['schedule: not JSON-serialisable', () => delay.schedule(any(cyclic))],
    ['schedule: over maxPayloadBytes', () => delay.schedule(any({ value: 1, pad: 'x'.repeat(100) }))],
    ['schedule: delayMs NaN', () => delay.schedule({ value: 1 }, { delayMs: NaN })],
    ['schedule: an unknown option', () => delay.schedule({ value: 1 }, any({ delay: 5000 }))],
    ['schedule: runAt unparseable', () => delay.schedule({ value: 1 }, { runAt: 'someday' })],
    ['reschedule: empty id', () => delay.reschedule('', { delayMs: 1 })],
    ['reschedule: delayMs NaN', () => delay.reschedule('t', { delayMs: NaN })],
    ['shift: empty id', () => delay.shift('', 1)],
    ['shift: delta NaN', () => delay.shift('t', NaN)],
    ['cancel: empty id', () => delay.cancel('')],
    ['get: empty id', () => delay.get('')],
    ['deadLetters: limit 0', () => delay.deadLetters(0)],
    ['deadLetters: page limit 0', () => delay.deadLetters({ limit: 0 })],
    ['requeue: empty id', () => delay.requeue('')],
    ['requeue: delayMs NaN', () => delay.requeue('t', { delayMs: NaN })],
    ['deleteDead: olderThan -1', () => delay.deleteDead({ olderThan: -1 })],
    ['list: unknown state', () => delay.list(any('waiting'))],
    ['list: limit 0', () => delay.list('dead', { limit: 0 })],
    ['upcoming: limit 0', () => delay.upcoming(0)],
    ['obliterate: consumers running', () => delay.obliterate()],
  ];

  it.each([...fixedCalls.map(([what, call]) => [`FixedQueue.${what}`, call] as const)])('%s', async (_what, call) => {
    const before = await keysMatching(harness.redis, `${prefix}:*`);
    let result: Promise<unknown> | undefined;
    expect(() => (result = call())).not.toThrow();
    await expect(result).rejects.toBeInstanceOf(QueueError);
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual(before);
    expect(await fixed.stats()).toMatchObject({ pending: 0 });
  });

  it.each([...delayCalls.map(([what, call]) => [`DelayQueue.${what}`, call] as const)])('%s', async (_what, call) => {
    const before = await keysMatching(harness.redis, `${prefix}:*`);
    let result: Promise<unknown> | undefined;
    expect(() => (result = call())).not.toThrow();
    await expect(result).rejects.toBeInstanceOf(QueueError);
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual(before);
    expect(await delay.stats()).toMatchObject({ scheduled: 0 });
  });
});
