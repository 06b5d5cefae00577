import { QueueEvents, QueueInputError } from 'nestjs-redis-queues';
import { MAX_BYTES_PER_CALL } from '../../libs/queue/src/fixed-queue/push-coalescer';
import { useQueueApps } from '@test/support/fixtures';

/** Byte limits are UTF-8 bytes, what Redis stores, not string lengths (UTF-16 units, up to 3 times fewer). */
describe('byte limits count UTF-8 bytes (real redis-server)', () => {
  const harness = useQueueApps();

  /** Serialised, `chars` CJK characters (3 bytes each) and two quotes. */
  const cjk = (chars: number) => '界'.repeat(chars);

  it('refuses a pushMany over 1 MB of UTF-8 though under 1 M UTF-16 units, writing nothing', async () => {
    const { fixed } = await harness.start({ fixed: [{ name: 'events', shards: 2 }] });
    const queue = fixed<string>('events');
    // 4,000 messages of 262 characters: 1.05 M units, 3.1 MB.
    const messages = Array.from({ length: 4000 }, () => cjk(260));
    expect(4000 * JSON.stringify(messages[0]).length).toBeLessThan(1.1e6);
    await expect(queue.pushMany('g', messages)).rejects.toThrow(
      /at most 1048576 bytes \(UTF-8\) of serialised messages per call, got 3128000; split the array/,
    );
    await expect(queue.pushMany('g', messages.slice(0, 4000 / 4))).resolves.toEqual({ dropped: 0 });
    expect(await queue.size('g')).toBe(1000);
  });

  it('splits the pushes of one turn into script calls of at most 1 MB of UTF-8 each', async () => {
    const { app, fixed } = await harness.start({ fixed: [{ name: 'events', shards: 1, capacity: 4000 }] });
    const queue = fixed<string>('events');
    const calls: number[] = [];
    app.get(QueueEvents).on('messages.pushed', ({ count }) => void calls.push(count));
    // 2,000 messages of 802 bytes in 268 units: 1.6 MB, 536 k units.
    const message = cjk(266);
    await Promise.all(Array.from({ length: 2000 }, () => queue.push('g', message)));
    const bytes = Buffer.byteLength(JSON.stringify(message));
    expect(calls.reduce((sum, count) => sum + count, 0)).toBe(2000);
    expect(Math.max(...calls) * bytes).toBeLessThanOrEqual(MAX_BYTES_PER_CALL);
    expect(await queue.size('g')).toBe(2000);
  });

  it('splits the schedules of one turn into script calls of at most 1 MB of UTF-8 payloads each', async () => {
    const { app, delay } = await harness.start({ delay: [{ name: 'tasks', shards: 1, maxPayloadBytes: 512 * 1024 }] });
    const calls: number[] = [];
    app.get(QueueEvents).on('tasks.scheduled', ({ count }) => void calls.push(count));
    // 420 kB in 140 k units each: two fit a call, three do not.
    const payload = cjk(140_000);
    const ids = ['a', 'b', 'c', 'd', 'e'];
    await Promise.all(ids.map((id) => delay('tasks').schedule(payload, { id, delayMs: 3_600_000 })));
    expect(calls).toEqual([2, 2, 1]);
    const stored = await Promise.all(ids.map((id) => delay('tasks').get(id)));
    expect(stored.map((task) => task?.payload === payload)).toEqual(ids.map(() => true));
  });

  it('holds both queues to maxPayloadBytes in UTF-8 bytes', async () => {
    const { fixed, delay } = await harness.start({
      fixed: [{ name: 'events', maxPayloadBytes: 64 }],
      delay: [{ name: 'tasks', maxPayloadBytes: 64 }],
    });
    // "é" is 2 bytes: with its quotes, 31 of them are 64 bytes (33 units), 32 are 66 (34 units).
    const fits = 'é'.repeat(31);
    const over = 'é'.repeat(32);
    await expect(fixed('events').push('g', fits)).resolves.toEqual({ dropped: 0 });
    await expect(fixed('events').push('g', over)).rejects.toThrow(/is 66 bytes serialised; the limit .* is 64/);
    await expect(fixed('events').pushMany('g', [fits, over])).rejects.toThrow(QueueInputError);
    await expect(delay('tasks').schedule(fits, { id: 'fits' })).resolves.toMatchObject({ id: 'fits' });
    await expect(delay('tasks').schedule(over, { id: 'over' })).rejects.toThrow(/is 66 bytes serialised/);
    expect(await fixed('events').size('g')).toBe(1);
    expect(await delay('tasks').get('over')).toBeNull();
  });
});
