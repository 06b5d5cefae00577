import IORedis from 'ioredis';
import { QueueConnectionError } from '../errors';
import { createMemoryClient, memoryInstance } from '../testing/memory/memory-instances';
import { memoryBackendOf } from './memory-backend';
import { WakeHints } from './wake-hints';

describe('WakeHints', () => {
  let publisher: IORedis;
  let subscriber: IORedis;
  const channel = `unit-wake-${process.pid}`;
  const received: string[] = [];

  beforeAll(async () => {
    publisher = new IORedis(process.env.REDIS_URL!);
    subscriber = new IORedis(process.env.REDIS_URL!);
    subscriber.on('message', (_channel: string, message: string) => received.push(message));
    await subscriber.subscribe(channel);
  });
  afterAll(async () => {
    await Promise.all([publisher.quit(), subscriber.quit()]);
  });

  /** What the channel carried, once a marker sent after the hints arrived. */
  async function carried(): Promise<string[]> {
    await publisher.publish(channel, 'end');
    while (!received.includes('end')) await new Promise((resolve) => setTimeout(resolve, 5));
    return received.splice(0).slice(0, -1);
  }

  it('reads what it writes, and nothing else', () => {
    expect(WakeHints.format({ shard: 3, at: 1_700_000_000_000 })).toBe('3:1700000000000');
    const hints = [
      { shard: 3, at: 1_700_000_000_000 },
      { shard: 0, at: 0 },
    ];
    for (const hint of hints) expect(WakeHints.parse(WakeHints.format(hint))).toEqual(hint);
    for (const junk of ['', ':5', '1', 'a:5', '1:b', '1.5:3']) expect(WakeHints.parse(junk)).toBeUndefined();
  });

  it('skips a hint when one for an earlier time in the same shard is still ahead, or when idlePollMs comes first', async () => {
    const hints = new WakeHints(publisher, channel, 2, 60_000);
    hints.publish(0, 1500, 1000);
    hints.publish(0, 1800, 1100); // covered by 1500, still ahead
    hints.publish(1, 1800, 1100); // another shard
    hints.publish(0, 1200, 1100); // earlier: sent
    hints.publish(0, 1900, 1300); // 1200 is past: sent
    hints.publish(0, 70_000, 2000); // after idlePollMs: every consumer looks by then
    hints.now(0); // due now, whatever was sent
    await hints.drain();
    expect(await carried()).toEqual(['0:1500', '1:1800', '0:1200', '0:1900', '0:0']);
  });

  it('sends the next hint of a shard after one that failed, or after forget()', async () => {
    const offline = new IORedis(process.env.REDIS_URL!);
    try {
      await offline.ping();
      offline.disconnect();
      const failing = new WakeHints(offline, channel, 1, 60_000);
      failing.publish(0, 1500, 1000); // refused: the connection is closed
      await failing.drain();
      await offline.connect();
      failing.publish(0, 1500, 1100);
      await failing.drain();
      expect(await carried()).toEqual(['0:1500']);
    } finally {
      offline.disconnect();
    }
    const hints = new WakeHints(publisher, channel, 1, 60_000);
    hints.publish(0, 1500, 1000);
    hints.forget(); // the connection dropped: nobody may have read it
    hints.publish(0, 1600, 1100);
    await hints.drain();
    expect(await carried()).toEqual(['0:1500', '0:1600']);
  });

  it('on memory://, hands each hint to the instance in-process: its subscribers get it, and no command is sent', async () => {
    const url = `memory://wake-hints-${process.pid}`;
    const [client, listener] = [createMemoryClient(url), createMemoryClient(url)];
    try {
      const heard: string[] = [];
      listener.on('message', (_channel: string, message: string) => heard.push(message));
      await listener.subscribe(channel);
      await client.ping();
      const commands = memoryInstance(url).commandsRun;
      const hints = new WakeHints(client, channel, 1, 60_000, { still: true }, memoryBackendOf(client)!.publish);
      hints.publish(0, 1500, 1000);
      hints.publish(0, 1200, 1000);
      hints.close();
      hints.publish(0, 1100, 1000); // after close, as a call on a closed connection: not sent
      await hints.drain();
      // A marker sent as a command, the one command of the test: it arrives after whatever was sent before it.
      await client.publish(channel, 'end');
      while (!heard.includes('end')) await new Promise((resolve) => setImmediate(resolve));
      expect(heard).toEqual(['0:1500', '0:1200', 'end']);
      expect(memoryInstance(url).commandsRun).toBe(commands + 1);
    } finally {
      client.disconnect();
      listener.disconnect();
    }
  });

  it('after a write of unknown outcome, sends its shard a hint due now until Redis answers one', async () => {
    const offline = new IORedis(process.env.REDIS_URL!);
    await offline.ping();
    offline.disconnect();
    try {
      const hints = new WakeHints(offline, channel, 2, 60_000);
      const unknown = new QueueConnectionError('no reply', { outcome: 'unknown' });
      const notSent = new QueueConnectionError('not sent', { outcome: 'not-sent' });
      await expect(hints.after(0, Promise.reject(notSent))).rejects.toBe(notSent);
      await expect(hints.after(1, Promise.reject(unknown))).rejects.toBe(unknown);
      await expect(hints.after(1, Promise.resolve(7))).resolves.toBe(7);
      // Refused while disconnected: tried again each second, then answered once connected.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await offline.connect();
      const until = Date.now() + 5000;
      while (!received.includes('1:0') && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await carried()).toEqual(['1:0']);
      hints.close();
    } finally {
      offline.disconnect();
    }
  });
});
