export * from './queue-module-options.interface';
export * from './fixed-queue-options.interface';
export * from './delay-queue-options.interface';
export * from './consumer-options.interface';
export * from './batch-context.interface';
export * from './delay-context.interface';
export * from './queue-events.interface';
export * from './queue-metrics-options.interface';
