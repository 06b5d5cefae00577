import { type DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { QueueMetricsModule } from 'nestjs-redis-queues';
import { Registry } from 'prom-client';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** What operators scrape and probe: `/metrics` (Prometheus) and `/health` (terminus). */
@Module({})
export class OpsModule {
  static forRoot(): DynamicModule {
    // A registry per application, not prom-client's global one: tests start several demos in one process.
    const registry = new Registry();
    return {
      module: OpsModule,
      imports: [TerminusModule.forRoot(), QueueMetricsModule.register({ registry })],
      controllers: [MetricsController, HealthController],
      providers: [{ provide: Registry, useValue: registry }],
    };
  }
}
