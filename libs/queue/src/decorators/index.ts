export * from './batch-consumer.decorator';
export * from './delay-consumer.decorator';
export * from './inject-queue.decorator';
export * from './on-queue-event.decorator';
export * from './recurring.decorator';
export * from './task-source.decorator';
