import { SequenceCheck } from './sequence-check';

function feed(check: SequenceCheck, seqs: number[]) {
  return seqs.map((seq) => check.receive(seq));
}

describe('SequenceCheck', () => {
  it('takes numbers in order from 1', () => {
    const check = new SequenceCheck();
    expect(feed(check, [1, 2, 3])).toEqual(['next', 'next', 'next']);
    expect(check.snapshot()).toEqual({
      received: 3,
      duplicates: 0,
      missing: 0,
      dead: 0,
      unexplained: 0,
      outOfOrder: 0,
      requeued: 0,
    });
  });

  it('counts a redelivered report as duplicates, not as a violation', () => {
    const check = new SequenceCheck();
    expect(feed(check, [1, 2, 3, 2, 3, 4])).toEqual(['next', 'next', 'next', 'duplicate', 'duplicate', 'next']);
    expect(check.snapshot()).toMatchObject({ received: 4, duplicates: 2, outOfOrder: 0, unexplained: 0 });
  });

  it('flags a gap no loss explains, and stops flagging it once the queue counts the losses', () => {
    const check = new SequenceCheck();
    feed(check, [1, 5, 6]);
    expect(check.snapshot()).toMatchObject({ missing: 3, unexplained: 3 });
    check.lost({ dropped: 1, expired: 1 });
    expect(check.snapshot()).toMatchObject({ missing: 3, unexplained: 1 });
    check.lost({ tooOld: 1 });
    expect(check.snapshot()).toMatchObject({ missing: 3, unexplained: 0 });
  });

  it('starts at 1: events lost before the first arrival are a gap too', () => {
    const check = new SequenceCheck();
    expect(check.receive(501)).toBe('after-gap');
    expect(check.snapshot()).toMatchObject({ missing: 500, unexplained: 500 });
    check.lost({ dropped: 500 });
    expect(check.snapshot().unexplained).toBe(0);
  });

  it('flags an event that arrives after a later one', () => {
    const check = new SequenceCheck();
    expect(feed(check, [1, 3, 2, 4])).toEqual(['next', 'after-gap', 'out-of-order', 'next']);
    expect(check.snapshot()).toMatchObject({ received: 4, missing: 0, outOfOrder: 1, unexplained: 0 });
    // Arriving twice late is one violation and then a duplicate.
    expect(check.receive(2)).toBe('duplicate');
    expect(check.snapshot().outOfOrder).toBe(1);
  });

  it('explains a gap by its dead letters one by one, and takes them back late when re-queued', () => {
    const check = new SequenceCheck();
    feed(check, [1]);
    check.dead([2, 3]);
    feed(check, [4]);
    expect(check.snapshot()).toMatchObject({ missing: 2, dead: 2, unexplained: 0 });
    feed(check, [5]);
    expect(feed(check, [3, 2])).toEqual(['requeued', 'requeued']);
    expect(check.snapshot()).toMatchObject({ received: 5, missing: 0, dead: 0, requeued: 2, outOfOrder: 0 });
  });

  it('does not let dead letters explain other missing events', () => {
    const check = new SequenceCheck();
    feed(check, [1]);
    check.dead([2]);
    feed(check, [4]);
    expect(check.snapshot()).toMatchObject({ missing: 2, dead: 1, unexplained: 1 });
    // A dead letter that had arrived (the answer to its report was lost) explains nothing.
    const other = new SequenceCheck();
    feed(other, [1, 2]);
    other.dead([2]);
    feed(other, [4]);
    expect(other.snapshot()).toMatchObject({ missing: 1, dead: 0, unexplained: 1 });
  });
});
