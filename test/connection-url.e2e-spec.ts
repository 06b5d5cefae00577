import { QueueConfigError } from 'nestjs-redis-queues';
import { useQueueApps } from './support/fixtures';

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
});
