import { QueueConfigError } from 'nestjs-redis-queues';
import { useQueueApps } from '@test/support/fixtures';

describe('connection URLs', () => {
  const harness = useQueueApps();

  it.each(['http://127.0.0.1:6379', 'https://app:s3cret@127.0.0.1:6379', 'tcp://127.0.0.1:6379'])(
    'refuses %s at start-up with a QueueConfigError that says what a Redis URL looks like',
    async (url) => {
      const start = harness.start({ connection: url, delay: [{ name: 'tasks' }] });
      await expect(start).rejects.toThrow(QueueConfigError);
      await expect(start).rejects.toThrow(
        /is a \w+:\/\/ URL; Redis URLs start with redis:\/\/ \(or rediss:\/\/ for TLS\)/,
      );
      await expect(start).rejects.not.toThrow(/s3cret/);
    },
  );

  it.each([
    ['127.0.0.1:6392', 'redis://127.0.0.1:6392'],
    ['app:s3cret@localhost:6392', 'redis://app:***@localhost:6392'],
    ['6392', 'redis://127.0.0.1:6392'],
  ])('refuses %s, which has no scheme, with a QueueConfigError showing the URL meant', async (given, fix) => {
    const start = harness.start({ connection: given, delay: [{ name: 'tasks' }] });
    await expect(start).rejects.toThrow(QueueConfigError);
    await expect(start).rejects.toThrow(
      `Invalid options for QueueModule.forRoot: connection has no scheme; a Redis URL starts with redis:// (or rediss:// for TLS): ${fix}`,
    );
    await expect(start).rejects.not.toThrow(/s3cret/);
  });
});

describe('connection of the wrong kind', () => {
  const harness = useQueueApps();

  it.each<[unknown, RegExp]>([
    [6391, /got 6391; for a port, pass \{ port: 6391 \} or redis:\/\/127\.0\.0\.1:6391/],
    [true, /\(got true\)/],
    [['redis://127.0.0.1:6379'], /\(got an array\)/],
    ['', /\(got "", a string\)/],
    [{ cluster: 'redis://127.0.0.1:7000' }, /connection\.cluster must be a non-empty array of nodes/],
    [
      { cluster: [7000], options: 'fast' },
      /connection\.options must be ioredis cluster options \(got "fast", a string\)/,
    ],
  ])('refuses %p with a QueueConfigError naming connection and what it accepts', async (connection, detail) => {
    const start = harness.start({ connection: connection as never, delay: [{ name: 'tasks' }] });
    await expect(start).rejects.toThrow(QueueConfigError);
    await expect(start).rejects.toThrow(/^Invalid options for QueueModule\.forRoot: connection[ .]/);
    await expect(start).rejects.toThrow(detail);
    if (typeof connection !== 'object' || Array.isArray(connection))
      await expect(start).rejects.toThrow(
        /must be a Redis URL string \(redis:\/\/host:port\), ioredis options \(\{ host, port, … \}\), \{ cluster: nodes, options\? \} or an existing ioredis client/,
      );
  });
});
