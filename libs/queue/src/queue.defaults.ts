/**
 * The default of every option, defined here once: the validation rules take their defaults from these
 * objects, and the options' doc comments point here.
 */

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DEAD_LETTER = Object.freeze({ capacity: 10_000, keepStack: false });
const BACKOFF = Object.freeze({
  type: 'exponential' as 'fixed' | 'exponential',
  delayMs: SECOND,
  maxDelayMs: HOUR,
});

/** The options both queue kinds take (`QueueBaseOptions`): the same defaults on both. */
export const QUEUE_BASE_DEFAULTS = Object.freeze({
  shards: 8,
  leaseMs: 30 * SECOND,
  maxAttempts: 5,
  backoff: BACKOFF,
  deadLetter: DEAD_LETTER,
});

/** `QueueModule.forRoot` / `forRootAsync`. */
export const MODULE_DEFAULTS = Object.freeze({
  prefix: 'nrq',
  consumers: true,
  shutdownTimeoutMs: 10 * SECOND,
  idlePollMs: 60 * SECOND,
  maxPayloadBytes: 1024 * 1024,
  commandTimeoutMs: 10 * SECOND,
  startup: 'fail' as 'fail' | 'continue',
  evictionPolicy: 'warn' as 'warn' | 'fail',
  dataContract: 'auto' as 'auto' | number,
  tracing: false,
});

/** `QueueModule.registerFixedQueue`. */
export const FIXED_QUEUE_DEFAULTS = Object.freeze({
  ...QUEUE_BASE_DEFAULTS,
  capacity: 1000,
  batchSize: 128,
  maxWaitMs: SECOND,
  ttlMs: 24 * HOUR,
  ordered: true,
  delivery: 'at-most-once' as 'at-most-once' | 'at-least-once',
  /** @deprecated `retryDelayMs` is read as `backoff`, whose default is `backoff` here. */
  retryDelayMs: SECOND,
  onExhausted: 'dead-letter' as 'dead-letter' | 'pause-group',
});

/** `QueueModule.registerDelayQueue`. */
export const DELAY_QUEUE_DEFAULTS = Object.freeze({
  ...QUEUE_BASE_DEFAULTS,
  retryMs: 0,
});

/** `@BatchConsumer(queue, options)`. */
export const BATCH_CONSUMER_DEFAULTS = Object.freeze({
  concurrency: 1,
  handlerTimeoutMs: 5 * 60 * SECOND,
  maxAttempts: 1,
  backoff: Object.freeze({ ...BACKOFF, delayMs: 100 }),
  /** @deprecated `retries` is read as `maxAttempts` - 1, whose default is `maxAttempts` here. */
  retries: 0,
  /** @deprecated `retryDelayMs` is read as `backoff`, whose default is `backoff` here. */
  retryDelayMs: 100,
  raw: false,
});

/** `@DelayConsumer(queue, options)`. */
export const DELAY_CONSUMER_DEFAULTS = Object.freeze({
  concurrency: 1,
  handlerTimeoutMs: 5 * 60 * SECOND,
  scheduleContext: 'link' as 'link' | 'parent',
});

/** `QueueDashboardModule.register`. */
export const DASHBOARD_DEFAULTS = Object.freeze({
  path: 'queues',
  hottestGroups: 10,
  upcomingTasks: 20,
  deadLetters: 20,
});

/** `QueueHealthIndicator.isHealthy(key, options)`. */
export const HEALTH_DEFAULTS = Object.freeze({
  timeoutMs: SECOND,
  recurringGraceMs: 60 * SECOND,
  dataLoss: 'warn' as 'warn' | 'fail',
});

/** `QueueMetricsModule.register`. */
export const METRICS_DEFAULTS = Object.freeze({
  prefix: 'nrq_',
});

/**
 * The default of every option, by where the option is given: `QUEUE_DEFAULTS.fixedQueue.capacity`,
 * `QUEUE_DEFAULTS.module.shutdownTimeoutMs`. Frozen: read it, do not change it.
 */
export const QUEUE_DEFAULTS = Object.freeze({
  module: MODULE_DEFAULTS,
  fixedQueue: FIXED_QUEUE_DEFAULTS,
  delayQueue: DELAY_QUEUE_DEFAULTS,
  batchConsumer: BATCH_CONSUMER_DEFAULTS,
  delayConsumer: DELAY_CONSUMER_DEFAULTS,
  dashboard: DASHBOARD_DEFAULTS,
  health: HEALTH_DEFAULTS,
  metrics: METRICS_DEFAULTS,
});
