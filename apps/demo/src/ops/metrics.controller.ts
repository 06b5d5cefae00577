import { Controller, Get, Header } from '@nestjs/common';
import { Registry } from 'prom-client';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly registry: Registry) {}

  /** Prometheus' text format: the queues' nrq_* metrics. */
  @Get()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
