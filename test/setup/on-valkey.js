// setupFiles of the "valkey" project: the same behaviour suites, connected to Valkey instead of Redis.
process.env.REDIS_URL = process.env.NRQ_TEST_VALKEY;
