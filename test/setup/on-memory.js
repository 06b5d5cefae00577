// setupFiles of the "memory" project: the same behaviour suites, on a memory instance of the test process
// that every application and raw client of a suite names (test/support/testing.ts). Its clock stands
// still until a test moves it (`afterTime` in test/support/testing.ts), so that no test waits for real
// time nor races it on a loaded machine; a suite not yet written so follows the wall clock, named by
// `@memory-clock system` in its first comment block (test/setup/environment.js reads it).
'use strict';

const clock = process.env.NRQ_MEMORY_CLOCK ?? 'manual';
if (clock !== 'manual' && clock !== 'system') throw new Error(`@memory-clock must be manual or system, not "${clock}"`);
process.env.REDIS_URL = `memory://suite?clock=${clock}`;
