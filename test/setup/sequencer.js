// Jest's order, with a start for a clone that has not run the tests yet. Jest runs the suites that
// took longest first (from its cache of the last run's durations), so that no long suite starts last
// while the other worker idles; without a cache it orders by file size, and the slowest suites are
// short files (the documentation's compilation, the fault suites that wait
// for restarts and processes): on a fresh clone in CI they started last and the run waited for them.
// The seconds below are what a full run from a fresh clone on two cores measured, for their order only.
'use strict';

const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/** `<project> <path>`: seconds, for the suites that take longest. */
const SLOW = {
  'redis test/sim/simulation.e2e-spec.ts': 89,
  'redis test/faults/task-source.e2e-spec.ts': 73,
  'redis test/faults/recurring-processes.e2e-spec.ts': 59,
  'redis test/faults/command-blackhole.e2e-spec.ts': 50,
  'redis test/faults/recurring-generations.e2e-spec.ts': 41,
  'redis test/faults/restart-timings.e2e-spec.ts': 37,
  'valkey test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 34,
  'redis test/faults/slowlog.e2e-spec.ts': 32,
  'cluster test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 31,
  'redis test/package/docs.e2e-spec.ts': 31,
  'redis test/faults/worker-kill.e2e-spec.ts': 28,
  'redis test/demo/demo.e2e-spec.ts': 24,
  'redis test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 21,
  'redis test/demo/demo-database.e2e-spec.ts': 18,
  'redis test/demo/demo-ops.e2e-spec.ts': 17,
  'redis test/faults/failover.e2e-spec.ts': 16,
  'redis test/faults/wake-ups.e2e-spec.ts': 16,
  'redis test/demo/demo-errors.e2e-spec.ts': 15,
  'memory test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 15,
  'redis test/faults/properties.e2e-spec.ts': 14,
  'redis test/module/handler-timeout.e2e-spec.ts': 13,
  'redis test/fixed-queue/fixed-queue.e2e-spec.ts': 13,
  'valkey test/fixed-queue/fixed-queue.e2e-spec.ts': 13,
};

class SlowFirst extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    // Once Jest knows each suite's duration, its own order stands.
    if (sorted.every((test) => test.duration != null)) return sorted;
    const seconds = (test) => {
      const file = path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/');
      return SLOW[`${test.context.config.displayName?.name} ${file}`] ?? 0;
    };
    // Stable: the rest keep Jest's order behind the listed ones.
    return sorted
      .map((test, index) => ({ test, index, seconds: test.duration == null ? seconds(test) : 0 }))
      .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
      .map(({ test }) => test);
  }
}

module.exports = SlowFirst;
