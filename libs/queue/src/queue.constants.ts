export const MAX_NAME_BYTES = 512;

export const BATCH_CONSUMER_METADATA = 'nrq:batch_consumer';
export const DELAY_CONSUMER_METADATA = 'nrq:delay_consumer';
export const QUEUE_EVENT_METADATA = 'nrq:queue_event';
export const RECURRING_METADATA = 'nrq:recurring';
export const TASK_SOURCE_METADATA = 'nrq:task_source';

/** The DelayQueue each `@Recurring` method's occurrences live in is named `recurring.<its name>`. */
export const RECURRING_QUEUE_PREFIX = 'recurring.';

const FIXED_QUEUE_TOKEN_PREFIX = 'nrq:fixed_queue:';
const DELAY_QUEUE_TOKEN_PREFIX = 'nrq:delay_queue:';

/** The injection token of a registered FixedQueue, for `moduleRef.get(...)` or custom providers. */
export function getFixedQueueToken(name: string): string {
  return FIXED_QUEUE_TOKEN_PREFIX + name;
}

/** The injection token of a registered DelayQueue. */
export function getDelayQueueToken(name: string): string {
  return DELAY_QUEUE_TOKEN_PREFIX + name;
}
