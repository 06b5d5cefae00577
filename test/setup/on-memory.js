// setupFiles of the "memory" project: the same behaviour suites, on a memory instance of the test process
// that every application and raw client of a suite names (test/support/testing.ts), on the wall clock.
process.env.REDIS_URL = 'memory://suite?clock=system';
