import { QueueInputError } from 'nestjs-redis-queues';
import { useQueueApps } from '@test/support/fixtures';

describe('DelayQueue.reschedule without a new time', () => {
  const harness = useQueueApps();

  it.each([[{}], [{ delayMs: undefined }], [{ runAt: undefined }]])(
    'refuses %p with QueueInputError and leaves the task where it was',
    async (time) => {
      const started = await harness.start({ root: { consumers: false }, delay: [{ name: 'reminders', shards: 2 }] });
      const reminders = started.delay('reminders');
      const { runAt } = await reminders.schedule({ text: 'later' }, { id: 'r1', delayMs: 3_600_000 });

      await expect(reminders.reschedule('r1', time)).rejects.toThrow(QueueInputError);
      await expect(reminders.reschedule('r1', time)).rejects.toThrow(/needs the new time/);

      expect(await reminders.get('r1')).toMatchObject({ state: 'scheduled', runAt });
      expect(await reminders.stats()).toMatchObject({ scheduled: 1, due: 0 });
    },
  );
});

describe('DelayQueue times far in the past', () => {
  const harness = useQueueApps();

  it('bounds delayMs as runAt: a time before 1970 is due now, at 0', async () => {
    const started = await harness.start({ root: { consumers: false }, delay: [{ name: 'reminders', shards: 2 }] });
    const reminders = started.delay('reminders');

    expect(await reminders.schedule({ text: 'then' }, { id: 'r1', runAt: -1 })).toMatchObject({ runAt: 0 });
    expect(await reminders.schedule({ text: 'then' }, { id: 'r2', delayMs: -1e15 })).toMatchObject({ runAt: 0 });
    expect(await reminders.get('r2')).toMatchObject({ state: 'scheduled', runAt: 0 });
    await expect(reminders.schedule({ text: 'never' }, { id: 'r3', delayMs: 8.64e15 - 1 })).rejects.toThrow(
      QueueInputError,
    );
    expect(await reminders.get('r3')).toBeNull();
  });
});
