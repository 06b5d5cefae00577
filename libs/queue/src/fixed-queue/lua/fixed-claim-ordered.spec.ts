import { fixedClaimOrdered } from './fixed-claim-ordered';

/** A stored entry as fixed-push writes it: the server's ms, then the message's JSON. */
const entry = (message: unknown, at = 1_700_000_000_000) => `[${at},${JSON.stringify(message)}]`;

describe('fixed-claim-ordered protocol', () => {
  const claim = (reads: [string, string[], [number, number, number, number, string]][]) =>
    fixedClaimOrdered.decode(
      [5000, -1, 0, ...reads.flatMap(([, , fields]) => fields)],
      {
        batchSize: 10,
        maxAgeMs: 0,
        maxWaitMs: 0,
        limit: 10,
        mode: '2',
        leaseMs: 1000,
        maxAttempts: 3,
        deadCapacity: 10,
        pauseExhausted: false,
        tokenBase: '0.tok',
        candidates: reads.map(([group]) => group),
        read: 10,
        raw: false,
      },
      reads.map(([, entries]) => entries),
    ).reply;

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
