import { rawClient } from '@test/support/testing';

// The suites are run against the servers the README says are tested: Redis (Debian's) and Valkey 8.
const expected = process.env.NRQ_TEST_VALKEY === process.env.REDIS_URL ? 'valkey' : 'redis';

describe(`the test server (${expected})`, () => {
  it('is the server this project runs the suites on', async () => {
    const redis = rawClient();
    try {
      const info = await redis.info('server');
      const valkey = /^valkey_version:(\d+)\./m.exec(info)?.[1];
      const redisMajor = Number(/^redis_version:(\d+)\.(\d+)/m.exec(info)?.[1]);
      if (expected === 'valkey') expect(valkey).toBe('8');
      else {
        expect(valkey).toBeUndefined();
        expect(redisMajor).toBeGreaterThanOrEqual(7);
      }
    } finally {
      redis.disconnect();
    }
  });
});
