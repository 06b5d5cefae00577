import { type DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { QueueDashboardModule, QueueExceptionFilter, QueueModule } from 'nestjs-redis-queues';
import { clusterNodes, DemoConfig, resolveDemoConfig } from './demo.config';
import { GamesModule } from './games/games.module';
import { OpsModule } from './ops/ops.module';
import { PetsModule } from './pets/pets.module';

@Module({})
export class AppModule {
  /** The whole demo for one configuration: defaults, overridden by `overrides` (validated). */
  static forRoot(overrides: Partial<DemoConfig> = {}): DynamicModule {
    const config = resolveDemoConfig(overrides);
    const nodes = clusterNodes(config);
    return {
      module: AppModule,
      global: true,
      imports: [
        // Runs the digest's drain (DigestReporter's intervalMs).
        ScheduleModule.forRoot(),
        QueueModule.forRoot({ connection: nodes ? { cluster: nodes } : config.redisUrl, prefix: config.prefix }),
        GamesModule,
        PetsModule,
        OpsModule.forRoot(),
        // A demo on loopback: no guard. An application exposed to others passes one (README: Dashboard).
        QueueDashboardModule.register({ path: 'queues' }),
      ],
      providers: [
        { provide: DemoConfig, useValue: config },
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
        },
        // The queues' errors as HTTP answers: bad input 400, a running task 409, Redis away 503.
        { provide: APP_FILTER, useClass: QueueExceptionFilter },
      ],
      exports: [DemoConfig],
    };
  }
}
