export { QueueModule } from './queue.module';
export { FixedQueue } from './fixed-queue/fixed-queue';
export { DelayQueue } from './delay-queue/delay-queue';
export {
  BatchConsumer,
  InjectFixedQueue,
  InjectDelayQueue,
  DelayConsumer,
  OnQueueEvent,
  Recurring,
  TaskSource,
} from './decorators';
export { QueueEvents } from './events/queue-events';
export { QueueConsumers } from './queue-consumers';
export { QueueClock, type AdvanceOptions } from './queue-clock';
export { QueueProcesses } from './queue-processes';
export type { AnnouncedProcess } from './redis/lua/process-announce';
export { RecurringSchedules } from './recurring/recurring-schedules';
export { QueueMetricsModule } from './metrics/queue-metrics.module';
export { QueueMetrics } from './metrics/queue-metrics';
export { QueueHealthIndicator } from './health/queue-health.indicator';
export { getFixedQueueToken, getDelayQueueToken } from './queue.constants';
export { QUEUE_DEFAULTS } from './queue.defaults';
export * from './errors';
export { QueueExceptionFilter } from './queue-exception.filter';
export * from './interfaces';
export { QueueDashboardModule } from './dashboard/queue-dashboard.module';
