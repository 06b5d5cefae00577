import { useMixedVersions } from '@test/support/mixed-versions';
import {
  controls,
  debounceAndRepeat,
  delayCrossing,
  delayRollout,
  failuresAndDeadLetters,
  killedRunner,
  orderedRollout,
  recurringTicks,
  replaceRunning,
  taskSourcePasses,
} from './scenarios';

// Processes of the previous release (its published tarball) beside processes of this tree, on one
// Redis, as during every rolling deploy and rollback: docs/upgrading.md's promise, scenario by scenario.
describe('the previous release and this build on one Redis', () => {
  const mixed = useMixedVersions();

  describe('FixedQueue', () => {
    it('ordered at-least-once traffic through a rollout and a rollback with SIGTERM and SIGKILL: nothing lost, order kept, one batch of a group at a time', async () => {
      expect(await orderedRollout(mixed)).toEqual([]);
    });

    it('failures, partial acknowledgements and dead letters re-queued by the other version', async () => {
      expect(await failuresAndDeadLetters(mixed)).toEqual([]);
    });

    it('pauses of groups (by hand and by exhausted attempts) and of the queue, made by one version, kept by the other', async () => {
      expect(await controls(mixed)).toEqual([]);
    });
  });

  describe('DelayQueue', () => {
    it('scheduled traffic through a rollout and a rollback with SIGTERM and SIGKILL: every task runs, on time, one run of an id at a time', async () => {
      expect(await delayRollout(mixed)).toEqual([]);
    });

    it('tasks scheduled by one version and rescheduled, shifted or cancelled by the other', async () => {
      expect(await delayCrossing(mixed)).toEqual([]);
    });

    it.each(['previous', 'current'] as const)(
      'a task running in a %s process, replaced by the other version, runs its replacement once after it',
      async (runner) => {
        expect(await replaceRunning(mixed, runner)).toEqual([]);
      },
    );

    it.each(['previous', 'current'] as const)(
      'a task whose %s process is SIGKILLed mid-run is finished by the other version, never beside it',
      async (runner) => {
        expect(await killedRunner(mixed, runner)).toEqual([]);
      },
    );

    it('debounced schedules from both versions, and a repeat declared by one and withdrawn by the other', async () => {
      expect(await debounceAndRepeat(mixed)).toEqual([]);
    });
  });

  it.each(['previous', 'current'] as const)(
    'task-source passes: rows restored by a %s process at start-up, swept by a pass of the other version',
    async (first) => {
      expect(await taskSourcePasses(mixed, first)).toEqual([]);
    },
  );

  it('a @Recurring schedule declared by processes of both versions runs each tick once', async () => {
    expect(await recurringTicks(mixed)).toEqual([]);
  });
});
