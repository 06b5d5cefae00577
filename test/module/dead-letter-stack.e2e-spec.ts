import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { expectErrors, expectedErrors } from '@test/support/logs';
import { pollUntil } from '@test/support/testing';

/** Thrown by both consumers: its stack names this file, as a real one names the server's paths. */
class UpstreamError extends Error {
  override name = 'UpstreamError';
}

const reports = recordBatches('events', {}, () => {
  throw new UpstreamError('the upstream is down');
});
const reminders = recordTasks('reminders', {}, () => {
  throw new UpstreamError('the upstream is down');
});

describe('what dead letters keep of the error (deadLetter.keepStack)', () => {
  const harness = useQueueApps();

  async function deadErrors(keepStack?: boolean) {
    const deadLetter = keepStack === undefined ? {} : { deadLetter: { keepStack } };
    expectErrors(/failed its last attempt and is dead-lettered .*error="the upstream is down"/);
    const { fixed, delay } = await harness.start({
      root: { idlePollMs: 200 },
      fixed: [{ name: 'events', maxWaitMs: 0, delivery: 'at-least-once', maxAttempts: 1, ...deadLetter }],
      delay: [{ name: 'reminders', maxAttempts: 1, ...deadLetter }],
      providers: [reports.consumer, reminders.consumer],
    });
    await fixed('events').push('g', { n: 1 });
    await delay('reminders').schedule({ n: 1 }, { id: 'r' });
    const batch = await pollUntil(async () => (await fixed('events').deadLetters())[0], 'the dead batch');
    const task = await pollUntil(async () => {
      const found = await delay('reminders').get('r');
      return found?.state === 'dead' ? found : undefined;
    }, 'the dead task');
    const [listed] = await delay('reminders').deadLetters();
    expect(listed.lastError).toBe(task.lastError);
    await pollUntil(() => expectedErrors().length === 2, 'a line for the dead batch and one for the dead task');
    return { fixed: batch.lastError, delay: task.lastError };
  }

  it.each([
    ['by default', undefined],
    ['with keepStack: false', false],
  ])('keeps the name and message only, %s: no server paths', async (_label, keepStack) => {
    expect(await deadErrors(keepStack)).toEqual({
      fixed: 'UpstreamError: the upstream is down',
      delay: 'UpstreamError: the upstream is down',
    });
  });

  it('keeps the stack with keepStack: true', async () => {
    const errors = await deadErrors(true);
    for (const text of [errors.fixed, errors.delay]) {
      expect(text).toMatch(/^UpstreamError: the upstream is down\n\s+at /);
      expect(text).toContain('dead-letter-stack.e2e-spec.ts');
    }
  });
});
