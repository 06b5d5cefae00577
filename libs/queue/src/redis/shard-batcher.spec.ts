import { ShardBatcher } from './shard-batcher';

/** A batcher whose calls are recorded and answered by `answer` (items echoed, tagged with the call's number). */
function recorded(answer: (shard: number, items: string[], call: number) => Promise<string[]> = echo) {
  const calls: { shard: number; items: string[] }[] = [];
  const batcher = new ShardBatcher<string, string>((shard, items) => {
    calls.push({ shard, items });
    return answer(shard, items, calls.length - 1);
  });
  return { batcher, calls };
}

const echo = async (shard: number, items: string[], call: number) => items.map((item) => `${item}@${shard}#${call}`);

describe('ShardBatcher', () => {
  it('sends the operations of one turn as one call per shard, in the order they were made', async () => {
    const { batcher, calls } = recorded();
    const results = Promise.all([
      batcher.add(1, 'a'),
      batcher.add(0, 'b'),
      batcher.add(1, 'c'),
      batcher.add(1, 'd'),
      batcher.add(0, 'e'),
    ]);
    expect(calls).toEqual([]);
    await results;
    expect(calls).toEqual([
      { shard: 1, items: ['a', 'c', 'd'] },
      { shard: 0, items: ['b', 'e'] },
    ]);
  });

  it("gives each caller its own operation's result", async () => {
    const { batcher } = recorded();
    const results = await Promise.all([batcher.add(2, 'x'), batcher.add(3, 'y'), batcher.add(2, 'z')]);
    expect(results).toEqual(['x@2#0', 'y@3#1', 'z@2#0']);
  });

  it('starts a new call for operations made in a later turn', async () => {
    const { batcher, calls } = recorded();
    await batcher.add(0, 'first');
    await batcher.add(0, 'second');
    expect(calls.map((call) => call.items)).toEqual([['first'], ['second']]);
  });

  it('sends what is buffered at once on flush(), so that a later operation cannot overtake it', async () => {
    const { batcher, calls } = recorded();
    const early = batcher.add(0, 'early');
    batcher.flush();
    const late = batcher.add(0, 'late');
    expect(calls).toEqual([{ shard: 0, items: ['early'] }]);
    expect(await Promise.all([early, late])).toEqual(['early@0#0', 'late@0#1']);
    batcher.flush(); // nothing buffered: no empty call
    expect(calls).toHaveLength(2);
  });

  it('cuts a large turn into calls of at most 1000 operations, in order', async () => {
    const { batcher, calls } = recorded();
    const items = Array.from({ length: 2500 }, (_, i) => `i${i}`);
    const results = await Promise.all(items.map((item) => batcher.add(5, item)));
    expect(calls.map((call) => call.items.length)).toEqual([1000, 1000, 500]);
    expect(calls.flatMap((call) => call.items)).toEqual(items);
    expect(results[0]).toBe('i0@5#0');
    expect(results[1000]).toBe('i1000@5#1');
    expect(results[2499]).toBe('i2499@5#2');
  });

  it("rejects the callers of a failed call only, with that call's error", async () => {
    const refused = new Error('shard 1 is down');
    const { batcher } = recorded(async (shard, items, call) => {
      if (shard === 1) throw refused;
      return echo(shard, items, call);
    });
    const settled = await Promise.allSettled([batcher.add(0, 'a'), batcher.add(1, 'b'), batcher.add(1, 'c')]);
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'a@0#0' },
      { status: 'rejected', reason: refused },
      { status: 'rejected', reason: refused },
    ]);
  });
});

describe('ShardBatcher at shutdown', () => {
  it('drains what it holds, operations added meanwhile included, and resolves once every call answered', async () => {
    const { batcher } = recorded();
    const answered: string[] = [];
    const add = (shard: number, item: string) => void batcher.add(shard, item).then((result) => answered.push(result));
    add(0, 'a');
    const draining = batcher.drain();
    add(1, 'b');
    await draining;
    expect(answered).toEqual(['a@0#0', 'b@1#1']);
  });

  it('once closed, rejects what it still holds and every later operation as not sent, and sends nothing more', async () => {
    const { batcher, calls } = recorded();
    const held = batcher.add(0, 'a');
    batcher.close();
    const later = batcher.add(1, 'b');
    for (const operation of [held, later])
      await expect(operation).rejects.toMatchObject({ name: 'QueueConnectionError', outcome: 'not-sent' });
    await new Promise(setImmediate);
    expect(calls).toEqual([]);
  });
});
