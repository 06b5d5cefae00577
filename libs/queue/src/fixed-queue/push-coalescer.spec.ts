import type { GroupPush, PushReply } from './fixed-queue.store';
import { MAX_BYTES_PER_CALL, MAX_MESSAGES_PER_CALL, PushCoalescer } from './push-coalescer';

/** Groups named `<shard>/<name>` live on that shard. */
const shardOf = (group: string) => Number(group.split('/')[0]);

/**
 * A coalescer whose calls are recorded and answers with `evicted(groups)` per group;
 * `refuse` makes the calls of a shard fail.
 */
function coalescer(evicted: (groups: GroupPush[]) => number[] = (groups) => groups.map(() => 0), refuse?: number) {
  const calls: { shard: number; groups: Written[] }[] = [];
  const pushed: { shard: number; groups: Written[]; outcome: PushReply }[] = [];
  const write = async (shard: number, groups: GroupPush[]): Promise<PushReply> => {
    calls.push({ shard, groups: groups.map(written) });
    if (shard === refuse) throw new Error(`shard ${shard} refused`);
    return { serverNow: 1000, wakeAt: -1, evicted: evicted(groups) };
  };
  const pushes = new PushCoalescer(write, shardOf, (shard, outcome, _sentAt, groups) =>
    pushed.push({ shard, groups: groups.map(written), outcome }),
  );
  return { pushes, calls, pushed };
}

/** A group's share of a call as written, a lone message included, copied when the call is made. */
interface Written {
  group: string;
  messages: string[];
}
const written = ({ group, messages }: GroupPush): Written => ({ group, messages: [messages].flat() });

describe('PushCoalescer', () => {
  it('writes the pushes of one turn with one call per shard, groups and messages in push order', async () => {
    const { pushes, calls } = coalescer();
    await Promise.all([
      pushes.add('1/a', 'a1', 2),
      pushes.add('0/b', 'b1', 2),
      pushes.add('1/c', ['c1', 'c2'], 4),
      pushes.add('1/a', 'a2', 2),
      pushes.add('0/b', ['b2', 'b3'], 4),
    ]);
    expect(calls).toEqual([
      {
        shard: 1,
        groups: [
          { group: '1/a', messages: ['a1', 'a2'] },
          { group: '1/c', messages: ['c1', 'c2'] },
        ],
      },
      { shard: 0, groups: [{ group: '0/b', messages: ['b1', 'b2', 'b3'] }] },
    ]);
  });

  it('writes nothing before the turn ends, and pushes of a later turn in a call of their own', async () => {
    const { pushes, calls } = coalescer();
    const first = pushes.add('0/g', 'm1', 2);
    expect(calls).toEqual([]);
    await first;
    await pushes.add('0/g', 'm2', 2);
    expect(calls.map((call) => call.groups)).toEqual([
      [{ group: '0/g', messages: ['m1'] }],
      [{ group: '0/g', messages: ['m2'] }],
    ]);
  });

  it("gives each caller its own evictions: a group's evictions belong to its last messages", async () => {
    // Group 0/g: requests of 2, 1 and 3 messages, 4 evicted; group 0/h: one request, 1 evicted.
    const { pushes } = coalescer(() => [4, 1]);
    const results = await Promise.all([
      pushes.add('0/g', ['1', '2'], 2),
      pushes.add('0/h', 'x', 1),
      pushes.add('0/g', '3', 1),
      pushes.add('0/g', ['4', '5', '6'], 3),
    ]);
    expect(results).toEqual([{ dropped: 0 }, { dropped: 1 }, { dropped: 1 }, { dropped: 3 }]);
  });

  it('counts a pushMany that follows single pushes to its group as one request of all its messages', async () => {
    const { pushes, calls } = coalescer(() => [3]);
    const results = await Promise.all([
      pushes.add('0/g', '1', 1),
      pushes.add('0/g', '2', 1),
      pushes.add('0/g', ['3', '4'], 2),
      pushes.add('0/g', '5', 1),
    ]);
    expect(calls.map(({ groups }) => groups)).toEqual([[{ group: '0/g', messages: ['1', '2', '3', '4', '5'] }]]);
    expect(results).toEqual([{ dropped: 0 }, { dropped: 0 }, { dropped: 2 }, { dropped: 1 }]);
  });

  it('reports each call it wrote with its shard, groups and outcome', async () => {
    const { pushes, pushed } = coalescer((groups) => groups.map((_, i) => i));
    await Promise.all([pushes.add('2/a', 'm', 1), pushes.add('2/b', 'n', 1), pushes.add('3/c', 'o', 1)]);
    expect(pushed).toEqual([
      {
        shard: 2,
        groups: [
          { group: '2/a', messages: ['m'] },
          { group: '2/b', messages: ['n'] },
        ],
        outcome: { serverNow: 1000, wakeAt: -1, evicted: [0, 1] },
      },
      { shard: 3, groups: [{ group: '3/c', messages: ['o'] }], outcome: { serverNow: 1000, wakeAt: -1, evicted: [0] } },
    ]);
  });

  it('rejects the callers of a refused call only, and reports nothing for it', async () => {
    const { pushes, pushed } = coalescer(undefined, 1);
    const settled = await Promise.allSettled([
      pushes.add('0/ok', 'a', 1),
      pushes.add('1/lost', 'b', 1),
      pushes.add('1/lost', ['c', 'd'], 2),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect((settled[1] as PromiseRejectedResult).reason).toEqual(new Error('shard 1 refused'));
    expect(pushed.map((call) => call.shard)).toEqual([0]);
  });
});

describe('PushCoalescer: one flush, script calls each Redis runs quickly', () => {
  it('writes the pushes of one turn per shard, at most 200 groups a call, every message once', async () => {
    const { calls, pushes } = coalescer();
    const results = Array.from({ length: 4000 }, (_, n) => pushes.add(`${n % 2}/g${n % 1000}`, `${n}`, 1));
    expect(await Promise.all(results)).toEqual(results.map(() => ({ dropped: 0 })));
    for (const { groups } of calls) expect(groups.length).toBeLessThanOrEqual(200);
    expect(calls.filter(({ shard }) => shard === 0).map(({ groups }) => groups.length)).toEqual([200, 200, 100]);
    const written = calls.flatMap(({ groups }) => groups.flatMap(({ messages }) => messages));
    expect(written.sort()).toEqual(Array.from({ length: 4000 }, (_, n) => `${n}`).sort());
  });

  it('cuts a flush at the byte bound between requests, never inside one', async () => {
    const { calls, pushes } = coalescer();
    const big = 'x'.repeat(MAX_BYTES_PER_CALL / 4);
    const batch = [big, big];
    await Promise.all([1, 2, 3].map(() => pushes.add('0/g', batch, 2 * big.length)));
    expect(calls.map(({ groups }) => groups.map(({ messages }) => messages.length))).toEqual([[4], [2]]);
  });

  it('cuts a flush by the UTF-8 bytes of each request, a few big ones among many small ones included', async () => {
    const { calls, pushes } = coalescer();
    // 600,000 bytes each in 200,000 UTF-16 units: two of them do not fit one call.
    const big = '你'.repeat(200_000);
    const small = Array.from({ length: 3000 }, (_, n) => `${n}`.padStart(10, '0'));
    await Promise.all([
      pushes.add('0/g', big, Buffer.byteLength(big)),
      pushes.add('0/g', big, Buffer.byteLength(big)),
      ...small.map((message) => pushes.add('0/g', message, message.length)),
    ]);
    const sizes = calls.map(({ groups }) =>
      groups.reduce((sum, { messages }) => sum + messages.reduce((n, m) => n + Buffer.byteLength(m), 0), 0),
    );
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_BYTES_PER_CALL);
    expect(calls.flatMap(({ groups }) => groups.flatMap(({ messages }) => messages))).toEqual([big, big, ...small]);
  });

  it('cuts a flush at the message bound', async () => {
    const { calls, pushes } = coalescer();
    await Promise.all(Array.from({ length: MAX_MESSAGES_PER_CALL + 1 }, (_, n) => pushes.add('0/g', `${n}`, 1)));
    expect(calls.map(({ groups }) => groups[0].messages.length)).toEqual([MAX_MESSAGES_PER_CALL, 1]);
  });

  it("holds a shard's pushes while its call is out and sends them as one call when it answers", async () => {
    const answers: (() => void)[] = [];
    const calls: string[][] = [];
    const write = (_shard: number, groups: GroupPush[]) =>
      new Promise<PushReply>((resolve) => {
        calls.push(groups.flatMap((g) => g.messages));
        answers.push(() => resolve({ serverNow: 1000, wakeAt: -1, evicted: groups.map(() => 0) }));
      });
    const pushes = new PushCoalescer(write, shardOf, () => undefined);
    const first = pushes.add('0/a', 'a1', 2);
    await new Promise(setImmediate);
    const later = [pushes.add('0/a', 'a2', 2)];
    await new Promise(setImmediate);
    later.push(pushes.add('0/b', 'b1', 2), pushes.add('1/c', 'c1', 2));
    await new Promise(setImmediate);
    // Shard 1 had nothing out: its push went at once.
    expect(calls).toEqual([['a1'], ['c1']]);
    answers.shift()!();
    await first;
    await new Promise(setImmediate);
    expect(calls).toEqual([['a1'], ['c1'], ['a2', 'b1']]);
    for (const answer of answers) answer();
    await Promise.all(later);
  });

  it('sends held pushes anyway once the call before them is out for 20 ms', async () => {
    const calls: string[][] = [];
    const write = (_shard: number, groups: GroupPush[]) => {
      calls.push(groups.flatMap((g) => g.messages));
      return calls.length === 1
        ? new Promise<PushReply>(() => undefined)
        : Promise.resolve({ serverNow: 1000, wakeAt: -1, evicted: groups.map(() => 0) });
    };
    const pushes = new PushCoalescer(write, shardOf, () => undefined);
    void pushes.add('0/a', 'a1', 2);
    await new Promise(setImmediate);
    const sentAt = Date.now();
    await pushes.add('0/a', 'a2', 2);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(15);
    expect(calls).toEqual([['a1'], ['a2']]);
  });
});

describe('PushCoalescer at shutdown', () => {
  /** Calls that wait until `answer()`; every call's messages are recorded. */
  function slowWrites() {
    const calls: string[][] = [];
    const answers: (() => void)[] = [];
    const write = (_shard: number, groups: GroupPush[]) =>
      new Promise<PushReply>((resolve) => {
        calls.push(groups.flatMap((g) => g.messages));
        answers.push(() => resolve({ serverNow: 1000, wakeAt: -1, evicted: groups.map(() => 0) }));
      });
    const answer = async () => {
      while (answers.length > 0) answers.shift()!();
      await new Promise(setImmediate);
    };
    return { pushes: new PushCoalescer(write, shardOf, () => undefined), calls, answer };
  }

  it('drains what it holds, pushes made meanwhile included, and resolves once every call answered', async () => {
    const { pushes, calls, answer } = slowWrites();
    const first = pushes.add('0/a', 'a1', 2);
    await new Promise(setImmediate);
    // Held back behind the call on its way.
    const held = pushes.add('0/a', 'a2', 2);
    let drained = false;
    const draining = pushes.drain().then(() => (drained = true));
    const meanwhile = pushes.add('1/b', 'b1', 2);
    await answer();
    await answer();
    await draining;
    expect(drained).toBe(true);
    expect(calls.flat().sort()).toEqual(['a1', 'a2', 'b1']);
    await expect(Promise.all([first, held, meanwhile])).resolves.toEqual([
      { dropped: 0 },
      { dropped: 0 },
      { dropped: 0 },
    ]);
  });

  it('once closed, rejects what it still holds and every later push as not sent, and sends nothing more', async () => {
    const { pushes, calls } = slowWrites();
    void pushes.add('0/a', 'a1', 2);
    await new Promise(setImmediate);
    const held = pushes.add('0/a', 'a2', 2);
    pushes.close();
    const later = pushes.add('1/b', 'b1', 2);
    for (const push of [held, later])
      await expect(push).rejects.toMatchObject({ name: 'QueueConnectionError', outcome: 'not-sent' });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls).toEqual([['a1']]);
  });
});
