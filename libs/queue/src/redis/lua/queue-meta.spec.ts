import { QueueKeys } from '../keys';
import { queueMeta } from './queue-meta';

describe('queue-meta protocol', () => {
  const input = { kind: 'fixed' as const, shards: 8, layout: 2, readsAsIs: 1, known: true, owesPass: false };

  it("names the queue's record and sends what is to be recorded", () => {
    const keys = new QueueKeys('nrq', 'events', 8);
    expect(queueMeta.keys(keys, input)).toEqual(['nrq:{events}:meta']);
    expect(queueMeta.args(input, keys)).toEqual(['fixed', 8, 2, 1, 1, 0]);
  });

  it('reads the stored record, numbers as numbers', () => {
    expect(queueMeta.decode(['delay', '4', '1', 0], input, [])).toEqual({
      kind: 'delay',
      shards: 4,
      layout: 1,
      created: false,
    });
    expect(queueMeta.decode(['fixed', '8', '2', 1], input, []).created).toBe(true);
  });
});
