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
  'redis test/sim/simulation.e2e-spec.ts': 82,
  'redis test/faults/task-source.e2e-spec.ts': 44,
  'redis test/faults/recurring-processes.e2e-spec.ts': 43,
  'redis test/faults/restart-timings.e2e-spec.ts': 42,
  'redis test/faults/slowlog.e2e-spec.ts': 32,
  'redis test/package/docs.e2e-spec.ts': 31,
  'redis test/faults/recurring-generations.e2e-spec.ts': 26,
  'valkey test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 24,
  'cluster test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 24,
  'redis test/faults/worker-kill.e2e-spec.ts': 23,
  'redis test/faults/command-blackhole.e2e-spec.ts': 20,
  'redis test/demo/demo.e2e-spec.ts': 19,
  'redis test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 19,
  'memory test/fixed-queue/fixed-queue-groups.e2e-spec.ts': 16,
  'redis test/faults/failover.e2e-spec.ts': 14,
  'valkey test/delay-queue/delay-queue.e2e-spec.ts': 13,
  'redis test/faults/retried-writes.e2e-spec.ts': 13,
  'memory test/fixed-queue/fixed-queue.e2e-spec.ts': 12,
  'redis test/module/handler-timeout.e2e-spec.ts': 12,
  'cluster test/fixed-queue/fixed-queue.e2e-spec.ts': 12,
  'redis test/faults/group-processes.e2e-spec.ts': 12,
  'cluster test/delay-queue/delay-queue.e2e-spec.ts': 12,
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
