export * from './queue.error';
