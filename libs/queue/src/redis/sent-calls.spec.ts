import IORedis from 'ioredis';
import { redisUrl } from '@test/support/testing';
import { SentCalls, type CallingClient } from './sent-calls';

/** The count of a real connection to the suite's redis-server, which answers or is told to stall. */
describe('SentCalls', () => {
  let client: IORedis;
  let calls: SentCalls;

  beforeEach(async () => {
    client = new IORedis(redisUrl(), { maxRetriesPerRequest: 0 });
    calls = SentCalls.of(client as unknown as CallingClient);
    await client.ping();
  });

  afterEach(() => client.disconnect());

  it('counts calls from their sending to their reply, errors included', async () => {
    const replies = [
      client.ping(),
      client.set('sent-calls', 'x'),
      client.hget('sent-calls', 'field').catch(() => 'WRONGTYPE'),
    ];
    expect(calls.count).toBe(3);
    expect(await Promise.all(replies)).toEqual(['PONG', 'OK', 'WRONGTYPE']);
    expect(calls.count).toBe(0);
    await client.del('sent-calls');
  });

  it('keeps a call whose wait timed out counted until a later reply comes, since its own may still come', async () => {
    const timed = new IORedis(redisUrl(), { commandTimeout: 100, maxRetriesPerRequest: 0 });
    const timedCalls = SentCalls.of(timed as unknown as CallingClient);
    try {
      await timed.ping();
      // Every client's calls wait while the server is paused: this one times out, its reply comes later.
      await client.call('CLIENT', 'PAUSE', '300', 'ALL');
      await expect(timed.ping()).rejects.toThrow(/timed out/);
      expect(timedCalls.count).toBe(1);
      // Answered once the pause ends (no timeout on this client): the late PONG has arrived by then.
      await client.ping();
      expect(timedCalls.count).toBe(1);
      expect(await timed.echo('after')).toBe('after');
      expect(timedCalls.count).toBe(0);
    } finally {
      timed.disconnect();
    }
  });

  it('fails the calls still waiting, and forgets them', async () => {
    const waiting = client.ping();
    expect(calls.failAll(new Error('silent'))).toBe(1);
    await expect(waiting).rejects.toThrow('silent');
    expect(calls.count).toBe(0);
  });
});
