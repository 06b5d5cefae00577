import { getDelayQueueToken, type DelayQueue, QueueInputError, QueueModule } from 'nestjs-redis-queues';
import { createApp, rawClient, redisUrl, uniquePrefix, useApps } from './support/testing';

describe('DelayQueue.reschedule without a new time', () => {
  const { apps } = useApps(rawClient);

  it.each([[{}], [{ delayMs: undefined }], [{ runAt: undefined }]])(
    'refuses %p with QueueInputError and leaves the task where it was',
    async (time) => {
      const prefix = uniquePrefix();
      const app = await createApp({
        imports: [
          QueueModule.forRoot({ connection: redisUrl(), prefix, consumers: false }),
          QueueModule.registerDelayQueue({ name: 'reminders', shards: 2 }),
        ],
      });
      apps.push(app);
      const reminders = app.get<DelayQueue>(getDelayQueueToken('reminders'));
      const { runAt } = await reminders.schedule({ text: 'later' }, { id: 'r1', delayMs: 3_600_000 });

      await expect(reminders.reschedule('r1', time)).rejects.toThrow(QueueInputError);
      await expect(reminders.reschedule('r1', time)).rejects.toThrow(/needs the new time/);

      expect(await reminders.get('r1')).toMatchObject({ state: 'scheduled', runAt });
      expect(await reminders.stats()).toMatchObject({ scheduled: 1, due: 0 });
    },
  );
});
