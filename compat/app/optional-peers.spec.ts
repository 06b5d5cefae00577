// The optional packages, installed with the README's Install lines for this application's Nest major,
// loaded by its own test runner (jest on Nest 11, vitest on Nest 12): a major that does not go with the
// application fails here, as @nestjs/schedule 12 and @nestjs/terminus 12 (ES modules only) do under a
// Nest 11 application's jest with `Must use import to load ES Module`.
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { QueueHealthIndicator, QueueMetricsModule, QueueModule } from 'nestjs-redis-queues';
import { register } from 'prom-client';

describe('the optional packages, installed as the README says', () => {
  it('start with the queues: the scheduler, metrics and a health check', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScheduleModule.forRoot(),
        TerminusModule,
        QueueModule.forRoot({
          connection: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
          prefix: `compat-peers-${process.pid}`,
        }),
        QueueModule.registerFixedQueue({ name: 'peers' }),
        QueueMetricsModule.register(),
      ],
    }).compile();
    await moduleRef.init();
    try {
      expect(moduleRef.get(SchedulerRegistry).getCronJobs().size).toBe(0);
      const indicator = moduleRef.get(QueueHealthIndicator);
      const health = await moduleRef.get(HealthCheckService).check([() => indicator.isHealthy('queues')]);
      expect(health.status).toBe('ok');
      expect(health.info?.queues?.queues).toEqual({ peers: expect.objectContaining({ kind: 'fixed' }) });
      expect(await register.metrics()).toMatch(/^nrq_messages_pending\{[^}]*queue="peers"[^}]*\} 0$/m);
    } finally {
      await moduleRef.close();
    }
  });
});
