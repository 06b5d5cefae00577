import { hashName, QueueKeys, shardOf } from './keys';

describe('shard hashing', () => {
  it('is stable across versions and processes (it decides where data lives)', () => {
    // FNV-1a 32-bit reference values: changing the hash would strand every stored group and task.
    expect(hashName('')).toBe(0x811c9dc5);
    expect(hashName('a')).toBe(0xe40c292c);
    expect(hashName('foobar')).toBe(0xbf9cf968);
  });

  it('spreads names over the shards', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[shardOf(`game-${i}`, 8)]++;
    for (const count of counts) expect(count).toBeGreaterThan(800);
  });
});

describe('QueueKeys', () => {
  it('puts the prefix first and one hash tag per shard', () => {
    const keys = new QueueKeys('nrq', 'game-events', 4);
    expect(keys.key(3, 'ready')).toBe('nrq:{game-events:3}:ready');
    expect(keys.member(0, 'g', 'a{b}:c')).toBe('nrq:{game-events:0}:g:a{b}:c');
    expect(keys.meta).toBe('nrq:{game-events}:meta');
  });

  it("knows its kind's kinds of keys, so a misspelt one does not compile", () => {
    const keys = new QueueKeys<'ready' | 'stats'>('nrq', 'q', 1);
    // @ts-expect-error 'reddy' is no kind of key
    expect(keys.key(0, 'reddy')).toBe('nrq:{q:0}:reddy');
    // @ts-expect-error a group's list is a member key, not a shard key
    expect(keys.key(0, 'g')).toBe('nrq:{q:0}:g');
  });
});
