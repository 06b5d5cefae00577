import { fixedShardKeys } from '../fixed-queue.keys';
import { QueueKeys } from '../../redis/keys';
import { fixedClaimUnordered } from './fixed-claim-unordered';

/** A stored entry as fixed-push writes it: the server's ms, then the message's JSON. */
const entry = (message: unknown, at = 1_700_000_000_000) => `[${at},${JSON.stringify(message)}]`;

/** A fixed-claim-unordered reply: server now, next due time, the groups listed as due, then per read its offset, expired and claimed counts. */
const reply = (nextDue: number, listed: string[], reads: [number, number, number][]) => [
  5000,
  nextDue,
  listed.length,
  ...listed,
  ...reads.flat(),
];

const input = (candidates: string[], batchSize: number, raw = false) => ({
  batchSize,
  maxAgeMs: 0,
  maxWaitMs: 0,
  limit: 10,
  candidates,
  read: batchSize,
  raw,
});

/** What a take of `reads` decodes to: each read is a group, its stored entries, and the script's offset, expired and claimed counts. */
const take = (reads: [string, string[], [number, number, number]][], batchSize: number, raw = false) =>
  fixedClaimUnordered.decode(
    reply(
      5000,
      [],
      reads.map(([, , counts]) => counts),
    ),
    input(
      reads.map(([group]) => group),
      batchSize,
      raw,
    ),
    reads.map(([, entries]) => entries),
  ).reply;

describe('fixed-claim-unordered protocol', () => {
  it('declares the shard keys in the order the script reads them, then each candidate list, and reads each candidate head', () => {
    const shard = fixedShardKeys(new QueueKeys('p', 'q', 2), 1);
    const taking = { ...input(['a', 'b'], 3), read: 6 };
    expect(fixedClaimUnordered.keys(shard, taking)).toEqual([
      'p:{q:1}:ready',
      'p:{q:1}:stats',
      'p:{q:1}:lastPush',
      'p:{q:1}:g:a',
      'p:{q:1}:g:b',
    ]);
    expect(fixedClaimUnordered.args(taking, shard)).toEqual([3, 0, 0, 10, 0, 0, 'a', 6, 'b', 6]);
    expect(fixedClaimUnordered.reads!(shard, taking)).toEqual([
      { key: 'p:{q:1}:g:a', count: 6 },
      { key: 'p:{q:1}:g:b', count: 6 },
    ]);
  });

  it('declares each candidate rate list after the lists, and the rate in ARGV, under groupRateLimit', () => {
    const shard = fixedShardKeys(new QueueKeys('p', 'q', 2), 1);
    const taking = { ...input(['a', 'b'], 3), read: 6, groupRateLimit: { max: 2, durationMs: 1000 } };
    expect(fixedClaimUnordered.keys(shard, taking).slice(3)).toEqual([
      'p:{q:1}:g:a',
      'p:{q:1}:g:b',
      'p:{q:1}:rate:a',
      'p:{q:1}:rate:b',
    ]);
    expect(fixedClaimUnordered.args(taking, shard)).toEqual([3, 0, 0, 10, 2, 1000, 'a', 6, 'b', 6]);
    expect(fixedClaimUnordered.reads!(shard, taking)).toHaveLength(2);
  });

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
    expect(fixedClaimUnordered.decode(reply(7000, ['g1', 'g:2'], []), input([], 10), []).reply).toEqual({
      serverNow: 5000,
      nextDueAt: 7000,
      due: ['g1', 'g:2'],
      batches: [],
    });
    expect(fixedClaimUnordered.decode(reply(-1, [], []), input([], 10), []).reply.nextDueAt).toBe(Infinity);
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
