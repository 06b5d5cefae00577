import { ReplyError } from 'ioredis';
import type IORedis from 'ioredis';
import { createMemoryClient, memoryInstance } from './memory-instances';

describe('memory engine', () => {
  let redis: IORedis;

  beforeEach(() => {
    redis = createMemoryClient('memory://');
  });

  afterEach(async () => {
    await redis.quit();
  });

  const evaluate = (lua: string, keys: string[] = [], args: (string | number)[] = []) =>
    redis.eval(lua, keys.length, ...keys, ...args);

  it("converts script values to replies by Redis' rules", async () => {
    expect(await evaluate('return 3.99')).toBe(3);
    expect(await evaluate('return -3.99')).toBe(-3);
    expect(await evaluate('return 1795811740548')).toBe(1795811740548);
    expect(await evaluate('return false')).toBeNull();
    expect(await evaluate('return true')).toBe(1);
    expect(await evaluate("return {1, 'two', {3}, nil, 'after nil'}")).toEqual([1, 'two', [3]]);
    expect(await evaluate("local t = {} t[#t + 1] = 'a' t[#t + 1] = 'b' return t")).toEqual(['a', 'b']);
    expect(await evaluate("return redis.status_reply('FINE')")).toBe('FINE');
    await expect(evaluate("return redis.error_reply('NOPE not today')")).rejects.toThrow('NOPE not today');
  });

  it('hands scripts replies as Redis does: nil as false, status as { ok }, numbers, arrays', async () => {
    const lua = `
      local missing = redis.call('HGET', KEYS[1], 'f')
      local set = redis.call('HSET', KEYS[1], 'f', ARGV[1])
      local status = redis.call('SET', KEYS[2], 'x')
      redis.call('RPUSH', KEYS[3], 'a', 'b')
      local list = redis.call('LRANGE', KEYS[3], 0, -1)
      return {tostring(missing), set, status.ok, #list, redis.call('HGET', KEYS[1], 'f')}`;
    expect(await evaluate(lua, ['h', 's', 'l'], ['é✓'])).toEqual(['false', 1, 'OK', 2, 'é✓']);
  });

  it('reads TIME from the clock, which stands still until advanced', async () => {
    const instance = memoryInstance('memory://clock-spec');
    const client = createMemoryClient('memory://clock-spec');
    try {
      const before = await client.time();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await client.time()).toEqual(before);
      instance.clock.advance(4 * 3600_000);
      const lua = "local t = redis.call('TIME') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
      expect(await client.eval(lua, 0)).toBe(Number(before[0]) * 1000 + Number(before[1]) / 1000 + 4 * 3600_000);
    } finally {
      await client.quit();
    }
  });

  it('runs cjson as lua-cjson does', async () => {
    const encoded = await evaluate("return cjson.encode({ group = 'a/b', n = 1795811740548, ok = true })");
    expect(JSON.parse(encoded as string)).toEqual({ group: 'a/b', n: 1795811740548, ok: true });
    expect(encoded).toContain('a\\/b');
    expect(
      await evaluate('return cjson.decode(ARGV[1]).messages[2].text', [], ['{"messages":[{},{"text":"é\\n✓"}]}']),
    ).toBe('é\n✓');
  });

  it('passes strings both ways intact while the engine grows its memory', async () => {
    // Megabytes through a script: the WebAssembly memory grows (its buffer is replaced) mid-call.
    const big = 'é✓x'.repeat(1_000_000);
    const lua = `
      redis.call('SET', KEYS[1], ARGV[1] .. ARGV[1])
      local stored = redis.call('GET', KEYS[1])
      return {#stored, string.sub(stored, -4), ARGV[2]}`;
    expect(await evaluate(lua, ['big'], [big, 'after'])).toEqual([2 * Buffer.byteLength(big), '✓x', 'after']);
    expect(await redis.get('big')).toBe(big + big);
    expect(await evaluate('return ARGV[1]', [], ['é✓ small again'])).toBe('é✓ small again');
  });

  it('raises a failed redis.call, and hands it to redis.pcall as { err }', async () => {
    await redis.set('s', 'x');
    await expect(evaluate("return redis.call('HGET', 's', 'f')")).rejects.toThrow(/^WRONGTYPE/);
    expect(await evaluate("local r = redis.pcall('HGET', 's', 'f') return r.err")).toMatch(/^WRONGTYPE/);
    await expect(evaluate('return nosuch.field')).rejects.toBeInstanceOf(ReplyError);
  });

  it('answers NOSCRIPT for an unknown SHA, and runs a script by SHA once loaded', async () => {
    await expect(redis.evalsha('0'.repeat(40), 0)).rejects.toThrow(/^NOSCRIPT/);
    const sha = (await redis.script('LOAD', 'return ARGV[1]')) as string;
    expect(await redis.evalsha(sha, 0, 'x')).toBe('x');
    await redis.script('FLUSH');
    await expect(redis.evalsha(sha, 0, 'x')).rejects.toThrow(/^NOSCRIPT/);
  });

  it("keeps each instance's scripts its own, though the engine that runs them is the process' one", async () => {
    const other = createMemoryClient('memory://');
    try {
      const sha = (await redis.script('LOAD', 'return ARGV[1]')) as string;
      await expect(other.evalsha(sha, 0, 'x')).rejects.toThrow(/^NOSCRIPT/);
      expect(await other.script('EXISTS', sha)).toEqual([0]);
      expect(await other.eval('return ARGV[1]', 0, 'y')).toBe('y');
      await redis.script('FLUSH');
      await expect(redis.evalsha(sha, 0, 'x')).rejects.toThrow(/^NOSCRIPT/);
      expect(await other.evalsha(sha, 0, 'z')).toBe('z');
    } finally {
      await other.quit();
    }
  });

  it('applies ZADD flags and ranges by score as Redis does', async () => {
    expect(await redis.zadd('z', 10, 'a', 20, 'b')).toBe(2);
    expect(await redis.zadd('z', 'LT', 'CH', 5, 'a')).toBe(1);
    expect(await redis.zadd('z', 'LT', 'CH', 50, 'a')).toBe(0);
    expect(await redis.zadd('z', 'GT', 'CH', 15, 'b')).toBe(0);
    expect(await redis.zadd('z', 'NX', 1, 'a')).toBe(0);
    expect(await redis.zadd('z', 'XX', 1, 'c')).toBe(0);
    expect(await redis.zrange('z', 0, -1, 'WITHSCORES')).toEqual(['a', '5', 'b', '20']);
    expect(await redis.zrange('z', '(5', '+inf', 'BYSCORE')).toEqual(['b']);
    expect(await redis.zrange('z', '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)).toEqual(['b']);
    expect(await redis.zpopmin('z')).toEqual(['a', '5']);
    await redis.zrem('z', 'b');
    expect(await redis.exists('z')).toBe(0);
  });

  it('returns every field present throughout a scan that deletes what it read, as Redis does', async () => {
    const fields = Array.from({ length: 50 }, (_, i) => [`f${i}`, String(i)]).flat();
    await redis.hset('h', ...fields);
    await redis.zadd('z', ...Array.from({ length: 50 }, (_, i) => [i, `m${i}`]).flat());
    const deleteWhileScanning = `
      local seen, cursor = 0, '0'
      repeat
        local page = redis.call(ARGV[1], KEYS[1], cursor, 'COUNT', 7)
        cursor = page[1]
        for i = 1, #page[2], 2 do
          redis.call(ARGV[2], KEYS[1], page[2][i])
          seen = seen + 1
        end
      until cursor == '0'
      return seen`;
    expect(await evaluate(deleteWhileScanning, ['h'], ['HSCAN', 'HDEL'])).toBe(50);
    expect(await evaluate(deleteWhileScanning, ['z'], ['ZSCAN', 'ZREM'])).toBe(50);
    expect(await redis.exists('h', 'z')).toBe(0);
  });

  it('aborts a MULTI with a refused command, and runs each command of one with a failing one', async () => {
    const refused = redis.multi().set('a', '1').call('NOSUCH').set('b', '2');
    await expect(refused.exec()).rejects.toThrow(/EXECABORT/);
    expect(await redis.exists('a', 'b')).toBe(0);
    const results = await redis.multi().set('a', '1').hget('a', 'f').set('b', '2').exec();
    expect(results?.map(([error]) => error?.message.split(' ')[0] ?? null)).toEqual([null, 'WRONGTYPE', null]);
    expect(await redis.exists('a', 'b')).toBe(2);
  });

  it('delivers published messages to subscribers of the same instance only', async () => {
    const subscriber = redis.duplicate();
    const other = createMemoryClient('memory://');
    try {
      const received: string[] = [];
      subscriber.on('message', (_channel: string, message: string) => received.push(message));
      await subscriber.subscribe('hints');
      expect(await other.publish('hints', 'elsewhere')).toBe(0);
      expect(await redis.publish('hints', 'here')).toBe(1);
      for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(received).toEqual(['here']);
    } finally {
      subscriber.disconnect();
      await other.quit();
    }
  });

  it('refuses a memory URL it does not understand, saying what it takes', () => {
    expect(() => memoryInstance('memory://x?clock=fast')).toThrow(/clock must be manual or system/);
    expect(() => memoryInstance('memory://x?colour=blue')).toThrow(/unknown parameter "colour"/);
    memoryInstance('memory://taken?clock=system');
    expect(() => memoryInstance('memory://taken')).toThrow(/already runs with clock=system/);
  });
});
