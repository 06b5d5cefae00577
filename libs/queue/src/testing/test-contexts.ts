import type { BatchContext } from '../interfaces/batch-context.interface';
import type { DelayContext } from '../interfaces/delay-context.interface';

/**
 * A `BatchContext` for calling a `@BatchConsumer` method in a unit test: a first delivery of group
 * `'group'` of queue `'queue'`, claimed now, with a signal that is never aborted unless you pass one
 * (an `AbortController`'s, to test how the handler stops). Every field can be overridden.
 */
export function createBatchContext(overrides: Partial<BatchContext> = {}): BatchContext {
  return {
    queue: 'queue',
    group: 'group',
    expired: 0,
    claimedAt: Date.now(),
    attempt: 1,
    signal: new AbortController().signal,
    ...overrides,
  };
}

/**
 * A `DelayContext` for calling a `@DelayConsumer` method in a unit test: a first delivery of task
 * `'task'` of queue `'queue'`, due and claimed now, with a signal that is never aborted unless you pass
 * one. Every field can be overridden.
 */
export function createDelayContext(overrides: Partial<DelayContext> = {}): DelayContext {
  const now = Date.now();
  return {
    queue: 'queue',
    id: 'task',
    attempt: 1,
    dueAt: now,
    runAt: now,
    firedAt: now,
    signal: new AbortController().signal,
    ...overrides,
  };
}
