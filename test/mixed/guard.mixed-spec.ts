import { useMixedVersions } from '@test/support/mixed-versions';
import { delayCrossing, replaceRunning } from './scenarios';

// The mixed-version suite must catch a build that changes the data in Redis behind the previous
// release's back. Two such builds, made from this tree on purpose: each breaks a scenario that the
// real build passes (rolling-deploy.mixed-spec.ts).
describe('the mixed-version suite catches an incompatible build', () => {
  describe('one that moves every shard key', () => {
    const mixed = useMixedVersions((file, text) =>
      file === 'redis/keys.ts'
        ? text.replace('`${prefix}:{${queue}:${shard}}`', '`${prefix}:{${queue}:s${shard}}`')
        : text,
    );

    it('tasks crossing versions are not found, or run twice', async () => {
      const problems = await delayCrossing(mixed);
      expect(problems.some((problem) => problem.includes('did not find'))).toBe(true);
    });
  });

  describe("one that keeps a running task's successor under another key", () => {
    // What the previous release's acknowledgement reads is where the successor is no longer written:
    // the replacement of a task it runs is lost, as between two unreleased versions of 2026-11.
    const mixed = useMixedVersions((file, text) =>
      file === 'redis/keys.ts'
        ? text.replace(
            'return `${this.tags[shard]}:${kind}`',
            "return `${this.tags[shard]}:${kind === 'successors' ? 'next' : kind}`",
          )
        : text,
    );

    it('the replacement of a task running in a previous process never runs', async () => {
      const problems = await replaceRunning(mixed, 'previous');
      expect(problems).toEqual([expect.stringContaining('ran [first] after a current replacement')]);
    });
  });
});
