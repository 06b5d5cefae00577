export * from './queue.error';
export * from './partial-batch.error';
