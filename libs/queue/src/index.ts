export { QueueModule } from './queue.module';
export { FixedQueue } from './fixed-queue/fixed-queue';
export { DelayQueue, type DeadTask } from './delay-queue/delay-queue';
export { BatchConsumer, InjectFixedQueue, InjectDelayQueue, DelayConsumer, OnQueueEvent } from './decorators';
export { QueueEvents } from './events/queue-events';
export { getFixedQueueToken, getDelayQueueToken } from './queue.constants';
export * from './errors';
export * from './interfaces';
