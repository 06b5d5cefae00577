import type { FixedQueueStore, GroupPush, PushOutcome } from './fixed-queue.store';
import { MAX_BYTES_PER_CALL, MAX_MESSAGES_PER_CALL, PushCoalescer } from './push-coalescer';

/** Records the calls a flush makes; each stores everything and evicts nothing. */
function recording() {
  const calls: { shard: number; groups: GroupPush[] }[] = [];
  const store = {
    push: (shard: number, groups: GroupPush[]): Promise<PushOutcome> => {
      calls.push({ shard, groups });
      return Promise.resolve({ serverNow: 0, wakeAt: -1, evicted: groups.map(() => 0) });
    },
  } as unknown as FixedQueueStore;
  return {
    calls,
    coalescer: new PushCoalescer(
      store,
      (group) => Number(group.split(':')[0]),
      () => undefined,
    ),
  };
}

describe('PushCoalescer: one flush, script calls each Redis runs quickly', () => {
  it('writes the pushes of one turn per shard, at most 200 groups a call, every message once', async () => {
    const { calls, coalescer } = recording();
    const pushes = Array.from({ length: 4000 }, (_, n) => coalescer.add(`${n % 2}:g${n % 1000}`, `${n}`, 1));
    expect(await Promise.all(pushes)).toEqual(pushes.map(() => ({ dropped: 0 })));
    for (const { groups } of calls) expect(groups.length).toBeLessThanOrEqual(200);
    expect(calls.filter(({ shard }) => shard === 0).map(({ groups }) => groups.length)).toEqual([200, 200, 100]);
    const written = calls.flatMap(({ groups }) => groups.flatMap(({ messages }) => messages));
    expect(written.sort()).toEqual(Array.from({ length: 4000 }, (_, n) => `${n}`).sort());
  });

  it('cuts a flush at the byte bound between requests, never inside one', async () => {
    const { calls, coalescer } = recording();
    const big = 'x'.repeat(MAX_BYTES_PER_CALL / 4);
    const batch = [big, big];
    await Promise.all([1, 2, 3].map(() => coalescer.add('0:g', batch, 2 * big.length)));
    expect(calls.map(({ groups }) => groups.map(({ messages }) => messages.length))).toEqual([[4], [2]]);
  });

  it('cuts a flush at the message bound', async () => {
    const { calls, coalescer } = recording();
    await Promise.all(Array.from({ length: MAX_MESSAGES_PER_CALL + 1 }, (_, n) => coalescer.add('0:g', `${n}`, 1)));
    expect(calls.map(({ groups }) => groups[0].messages.length)).toEqual([MAX_MESSAGES_PER_CALL, 1]);
  });
});
