import type { InjectionToken } from '@nestjs/common';
import type { BatchContext } from './batch-context.interface';
import type { BackoffOptions } from './queue-options.interface';

export interface BatchConsumerOptions {
  /** Batches handled at once by this method in this process. Default: `QUEUE_DEFAULTS.batchConsumer.concurrency`. */
  concurrency?: number;
  /**
   * A batch whose handler has not settled after this long is overdue: `ctx.signal` aborts with a
   * HandlerTimeoutError (logged, `handler.timeout`, metrics, health) and its slot is freed for other
   * groups, but its group stays held (lease extended) until the handler settles, whose outcome then counts
   * as usual; no further in-process attempt starts. Covers every in-process attempt of a batch. Past
   * `concurrency` overdue handlers the consumer stops claiming until some settle. Default:
   * `QUEUE_DEFAULTS.batchConsumer.handlerTimeoutMs`.
   */
  handlerTimeoutMs?: number;
  /** Scheduled mode: drain every due group on this cron (registered in @nestjs/schedule's SchedulerRegistry). */
  cron?: string;
  /** Scheduled mode: drain every due group this often (registered in SchedulerRegistry). */
  intervalMs?: number;
  /** Name of the cron job / interval in SchedulerRegistry. Default `nrq:<queue>:<Class>.<method>`. */
  name?: string;
  /**
   * At-most-once queues: attempts of a batch in this process, its handler run again after `backoff` while
   * it throws: 1 to 1,000 (an at-least-once queue retries through Redis, with its own `maxAttempts` and
   * `backoff`, and refuses more than 1). Default: `QUEUE_DEFAULTS.batchConsumer.maxAttempts` (no retry).
   */
  maxAttempts?: number;
  /** Wait before the next in-process attempt. Default: `QUEUE_DEFAULTS.batchConsumer.backoff` (exponential from 100 ms). */
  backoff?: BackoffOptions;
  /**
   * The former words of `maxAttempts`: extra attempts, still read as `maxAttempts: retries + 1` with a
   * warning at start-up; 0 to 999. Giving both with different values is refused.
   * @deprecated Use `maxAttempts`, the words of every retry.
   */
  retries?: number;
  /**
   * The former name of `backoff` (doubled after each attempt, at most 1 h), still read as
   * `backoff: { type: 'exponential', delayMs: min(retryDelayMs, 1 h), maxDelayMs: 1 h }` with a warning at
   * start-up. Giving both with different values is refused.
   * @deprecated Use `backoff`, the words of every retry.
   */
  retryDelayMs?: number;
  /**
   * Called with a batch that failed for good, whose messages are not delivered again: at-most-once, its
   * handler still threw after every in-process attempt (`maxAttempts`); at-least-once, its last delivery
   * (`maxAttempts`) failed and it went to the dead letters. A method name of the same provider, or a function.
   */
  onFailed?: string | ((error: unknown, messages: unknown[], ctx: BatchContext) => unknown);
  /**
   * Hand over each message as the JSON text it was stored as (`string[]`), without parsing it: for
   * handlers that forward batches (`'[' + messages.join(',') + ']'` is the batch as a JSON array).
   * Parsing is most of a consumer's CPU time. Default: `QUEUE_DEFAULTS.batchConsumer.raw`.
   */
  raw?: boolean;
}

export interface DelayConsumerOptions {
  /** Tasks handled at once by this method in this process. Default: `QUEUE_DEFAULTS.delayConsumer.concurrency`. */
  concurrency?: number;
  /**
   * A task whose handler has not settled after this long is overdue: `ctx.signal` aborts with a
   * HandlerTimeoutError (logged, `handler.timeout`, metrics, health) and its slot is freed for other
   * tasks, but the task stays held (lease extended) until the handler settles, whose outcome then counts
   * as usual (resolved acknowledges, thrown retries). Past `concurrency` overdue handlers the consumer
   * stops claiming until some settle. Default: `QUEUE_DEFAULTS.delayConsumer.handlerTimeoutMs`.
   */
  handlerTimeoutMs?: number;
  /**
   * Traced queues: how a task's process span relates to the span that scheduled it. `'link'`: a new
   * trace linked to it (the scheduling request ended long ago); `'parent'`: a child of it, so the task
   * shows inside the trace that scheduled it. Default: `QUEUE_DEFAULTS.delayConsumer.scheduleContext`.
   */
  scheduleContext?: 'link' | 'parent';
}

/**
 * Consumer options taken from configuration at start-up, with the providers `inject` lists (from any
 * module of the application): `{ inject: [ConfigService], useFactory: (config) => ({ cron: config.get('DIGEST_CRON') }) }`.
 * What the factory returns (or resolves to) is laid over the options written beside it, then validated.
 */
export interface ConsumerOptionsFactory<O> {
  inject?: InjectionToken[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a factory takes whatever `inject` lists, as Nest's own do
  useFactory: (...args: any[]) => O | Promise<O>;
}

/** `@BatchConsumer(queue, options)`: written out, or (partly) made by a factory at start-up. */
export type BatchConsumerDecoratorOptions =
  BatchConsumerOptions | (BatchConsumerOptions & ConsumerOptionsFactory<BatchConsumerOptions>);

/** `@DelayConsumer(queue, options)`: written out, or made by a factory at start-up. */
export type DelayConsumerDecoratorOptions =
  DelayConsumerOptions | (DelayConsumerOptions & ConsumerOptionsFactory<DelayConsumerOptions>);
