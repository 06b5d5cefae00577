import { decodeClaim, decodeTake } from './fixed-queue.store';

/** A stored entry as fixed-push writes it: the server's ms, then the message's JSON. */
const entry = (message: unknown, at = 1_700_000_000_000) => `[${at},${JSON.stringify(message)}]`;

/** A fixed-take reply: server now, next due time, the groups listed as due, then per read its offset, expired and claimed counts. */
const reply = (nextDue: number, listed: string[], reads: [number, number, number][]) => [
  5000,
  nextDue,
  listed.length,
  ...listed,
  ...reads.flat(),
];

/** What a take of `reads` decodes to: each read is a group, its stored entries, and the script's offset, expired and claimed counts. */
const take = (reads: [string, string[], [number, number, number]][], batchSize: number, raw = false) =>
  decodeTake(
    reply(
      5000,
      [],
      reads.map(([, , counts]) => counts),
    ),
    reads.map(([group, entries]) => ({ group, entries })),
    batchSize,
    raw,
  );

describe('decodeTake (fixed-take replies)', () => {
  it('cuts what a read claimed into batches of batchSize, in stored order', () => {
    const entries = [1, 2, 3, 4, 5].map((n) => entry({ n }));
    const taken = take([['g', entries, [0, 0, 5]]], 2);
    expect(taken.batches).toEqual([
      { group: 'g', expired: 0, messages: [{ n: 1 }, { n: 2 }], attempt: 1 },
      { group: 'g', expired: 0, messages: [{ n: 3 }, { n: 4 }], attempt: 1 },
      { group: 'g', expired: 0, messages: [{ n: 5 }], attempt: 1 },
    ]);
  });

  it('skips the expired head of a read and counts it on the first batch only', () => {
    const entries = ['old1', 'old2', 'a', 'b', 'c'].map((m) => entry(m));
    const taken = take([['g', entries, [2, 2, 3]]], 2);
    expect(taken.batches).toEqual([
      { group: 'g', expired: 2, messages: ['a', 'b'], attempt: 1 },
      { group: 'g', expired: 0, messages: ['c'], attempt: 1 },
    ]);
  });

  it('tells a read made only of expired messages as an empty batch with its count, and an empty read as nothing', () => {
    const taken = take(
      [
        ['stale', ['x', 'y', 'z'].map((m) => entry(m)), [3, 3, 0]],
        ['empty', [], [0, 0, 0]],
      ],
      10,
    );
    expect(taken.batches).toEqual([{ group: 'stale', expired: 3, messages: [], attempt: 0 }]);
  });

  it('keeps the batches of several reads apart, in the order of the reads', () => {
    const taken = take(
      [
        ['a', [entry(1), entry(2)], [0, 0, 2]],
        ['b', [entry(3)], [0, 0, 1]],
      ],
      10,
    );
    expect(taken.batches.map(({ group, messages }) => [group, messages])).toEqual([
      ['a', [1, 2]],
      ['b', [3]],
    ]);
  });

  it("reads the server's time, the next due time (Infinity for an empty shard) and the groups due next", () => {
    expect(decodeTake(reply(7000, ['g1', 'g:2'], []), [], 10, false)).toEqual({
      serverNow: 5000,
      nextDueAt: 7000,
      due: ['g1', 'g:2'],
      batches: [],
    });
    expect(decodeTake(reply(-1, [], []), [], 10, false).nextDueAt).toBe(Infinity);
  });

  it('hands raw consumers the JSON text as stored, commas and brackets inside it included', () => {
    const messages = [{ text: 'a,b]' }, '[1,2]', 'é\n', null];
    const entries = messages.map((m) => entry(m));
    const raw = take([['g', entries, [0, 0, 4]]], 10, true);
    expect(raw.batches[0].messages).toEqual(messages.map((m) => JSON.stringify(m)));
    const parsed = take([['g', entries, [0, 0, 4]]], 10);
    expect(parsed.batches[0].messages).toEqual(messages);
  });
});

describe('decodeClaim (fixed-claim replies: ordered queues)', () => {
  const claim = (reads: [string, string[], [number, number, number, number, string]][]) =>
    decodeClaim(
      [5000, -1, 0, ...reads.flatMap(([, , fields]) => fields)],
      reads.map(([group, entries]) => ({ group, entries })),
      false,
    );

  it('gives one batch per group, with its delivery number and token, after the expired head', () => {
    const taken = claim([
      ['a', ['old', 'x', 'y'].map((m) => entry(m)), [1, 1, 2, 3, '0.tok.1']],
      ['b', [entry('z')], [0, 0, 1, 1, '0.tok.2']],
    ]);
    expect(taken.batches).toEqual([
      { group: 'a', expired: 1, messages: ['x', 'y'], attempt: 3, token: '0.tok.1' },
      { group: 'b', expired: 0, messages: ['z'], attempt: 1, token: '0.tok.2' },
    ]);
  });

  it('reports a group that only expired messages, and skips a group not claimed (held elsewhere)', () => {
    const taken = claim([
      ['stale', [entry('x')], [1, 1, 0, 0, '']],
      ['held', [entry('y')], [0, 0, 0, 0, '']],
    ]);
    expect(taken.batches).toEqual([{ group: 'stale', expired: 1, messages: [], attempt: 0 }]);
  });
});
