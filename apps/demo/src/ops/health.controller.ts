import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { QueueHealthIndicator } from 'nestjs-redis-queues';

/** The digest is drained every few seconds by design; a minute behind means its consumers are not keeping up. */
const MAX_LAG_MS = 60_000;

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: QueueHealthIndicator,
  ) {}

  /** 200 while Redis answers, consumers run and no queue lags; 503 with the reason otherwise. */
  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.queues.isHealthy('queues', { maxLagMs: MAX_LAG_MS })]);
  }
}
