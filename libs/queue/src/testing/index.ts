// The `nestjs-redis-queues/testing` entry point: helpers for an application's own tests, kept out of
// the main entry so that production code does not import them by accident.
export { createBatchContext, createDelayContext } from './test-contexts';
export { passTime, type PassTimeOptions } from './pass-time';
export { createMemoryClient } from './memory/memory-instances';
