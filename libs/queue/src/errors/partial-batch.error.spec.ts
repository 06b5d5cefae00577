import { QueueInputError } from './queue.error';
import { PartialBatchError } from './partial-batch.error';

describe('PartialBatchError', () => {
  it('takes a whole number of messages handled', () => {
    expect(new PartialBatchError(2).acknowledged).toBe(2);
    expect(new PartialBatchError(0, new Error('upstream full')).message).toBe(
      'the first 0 messages of the batch were handled, not the rest: upstream full',
    );
  });

  it.each([
    ['2', "got '2' (a string)"],
    [1.5, 'got 1.5'],
    [-1, 'got -1'],
    [Number.NaN, 'got NaN'],
    [undefined, 'got undefined'],
  ])('refuses %p at construction, with a typed error', (count, shown) => {
    const construct = () => new PartialBatchError(count as never);
    expect(construct).toThrow(QueueInputError);
    expect(construct).toThrow(`PartialBatchError needs the number of messages handled, a whole number ≥ 0, ${shown}`);
  });
});
