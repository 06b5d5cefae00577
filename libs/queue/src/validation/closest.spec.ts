import { closest, editDistance } from './closest';

describe('editDistance', () => {
  it('counts insertions, deletions and substitutions, ignoring case', () => {
    expect(editDistance('maxWait', 'maxWaitMs')).toBe(2);
    expect(editDistance('shard', 'shards')).toBe(1);
    expect(editDistance('capacty', 'capacity')).toBe(1);
    expect(editDistance('batchsize', 'batchSize')).toBe(0);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('closest', () => {
  const keys = ['name', 'capacity', 'batchSize', 'maxWaitMs', 'maxAgeMs', 'ttlMs', 'shards', 'shutdownTimeoutMs'];

  it('names the nearest key of a likely typo', () => {
    expect(closest('maxWait', keys)).toBe('maxWaitMs');
    expect(closest('maxAge', keys)).toBe('maxAgeMs');
    expect(closest('shard', keys)).toBe('shards');
    expect(closest('shutdownTimeout', keys)).toBe('shutdownTimeoutMs');
  });

  it('names nothing when no key is near', () => {
    expect(closest('concurrency', keys)).toBeUndefined();
    expect(closest('x', [])).toBeUndefined();
  });
});
