import { Type } from 'class-transformer';
import { Allow, IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, Min, ValidateNested } from 'class-validator';
import type { BatchConsumerOptions, DelayConsumerOptions } from '../interfaces';
import { BATCH_CONSUMER_DEFAULTS, DELAY_CONSUMER_DEFAULTS } from '../queue.defaults';
import type { Checks, SameKeys } from './apply-rules';
import { withFormerNames, written, type FormerName } from './former-names';
import { Given } from './option-rules';
import { BackoffRules, legacyBackoff, MAX_ATTEMPTS, MAX_TIMER_MS } from './queue-options';

/** A handler's deadline is a timer: setTimeout's limit. */
export const MAX_HANDLER_TIMEOUT_MS = MAX_TIMER_MS;

/** Options a batch consumer leaves unset when not given: no default applies. */
type UnsetBatchConsumerOptions = 'cron' | 'intervalMs' | 'name' | 'onFailed' | FormerBatchConsumerOptions;

/** Options a batch consumer reads under their current names (see `BATCH_FORMER_NAMES`). */
type FormerBatchConsumerOptions = 'retries' | 'retryDelayMs';

/** A consumer's in-process backoff: its own default, the rules of every backoff. */
class ConsumerBackoffRules extends BackoffRules {
  override delayMs: number = BATCH_CONSUMER_DEFAULTS.backoff.delayMs;
}

export class BatchConsumerOptionsRules
  implements
    Required<Omit<BatchConsumerOptions, 'backoff' | UnsetBatchConsumerOptions>>,
    Pick<BatchConsumerOptions, UnsetBatchConsumerOptions>,
    SameKeys<BatchConsumerOptions, BatchConsumerOptionsRules>
{
  @IsInt()
  @Min(1)
  @Max(10_000)
  concurrency: number = BATCH_CONSUMER_DEFAULTS.concurrency;

  @IsInt()
  @Min(1)
  @Max(MAX_HANDLER_TIMEOUT_MS)
  handlerTimeoutMs: number = BATCH_CONSUMER_DEFAULTS.handlerTimeoutMs;

  @IsOptional()
  @IsString()
  cron?: string;

  @IsOptional()
  @IsInt()
  @Min(10)
  intervalMs?: number;

  @IsOptional()
  @IsString()
  name?: string;

  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS)
  maxAttempts: number = BATCH_CONSUMER_DEFAULTS.maxAttempts;

  @ValidateNested()
  @Type(() => ConsumerBackoffRules)
  backoff = new ConsumerBackoffRules();

  /** The former words of `maxAttempts`: read as it (resolveBatchConsumerOptions), with its own bound. */
  @Given()
  @IsInt()
  @Min(0)
  @Max(MAX_ATTEMPTS - 1)
  retries?: number;

  /** The former name of `backoff`: read as it, with its own bound. */
  @Given()
  @IsInt()
  @Min(0)
  retryDelayMs?: number;

  @IsBoolean()
  raw: boolean = BATCH_CONSUMER_DEFAULTS.raw;

  @Allow()
  onFailed?: BatchConsumerOptions['onFailed'];
}

export class DelayConsumerOptionsRules
  implements Required<DelayConsumerOptions>, SameKeys<DelayConsumerOptions, DelayConsumerOptionsRules>
{
  @IsInt()
  @Min(1)
  @Max(10_000)
  concurrency: number = DELAY_CONSUMER_DEFAULTS.concurrency;

  @IsInt()
  @Min(1)
  @Max(MAX_HANDLER_TIMEOUT_MS)
  handlerTimeoutMs: number = DELAY_CONSUMER_DEFAULTS.handlerTimeoutMs;

  @IsIn(['link', 'parent'])
  scheduleContext = DELAY_CONSUMER_DEFAULTS.scheduleContext;
}

export const batchConsumerChecks: Checks<BatchConsumerOptionsRules> = (o) => {
  const problems: string[] = [];
  if (o.cron !== undefined && o.intervalMs !== undefined) problems.push('use either cron or intervalMs, not both');
  if (o.onFailed !== undefined && typeof o.onFailed !== 'string' && typeof o.onFailed !== 'function') {
    problems.push('onFailed must be a method name or a function');
  }
  return problems;
};

/** Option names a `@BatchConsumer` still reads as others. */
const BATCH_FORMER_NAMES: FormerName<BatchConsumerOptionsRules>[] = [
  {
    former: 'retries',
    current: 'maxAttempts',
    names: 'the attempts (maxAttempts = retries + 1)',
    read: (retries: number) => retries + 1,
    advice: (retries: number) => `maxAttempts: ${retries + 1}, the retry's words everywhere`,
  },
  {
    former: 'retryDelayMs',
    current: 'backoff',
    names: 'the wait between attempts',
    read: legacyBackoff,
    advice: (retryDelayMs: number) => `backoff: ${written(legacyBackoff(retryDelayMs))}, the retry's words everywhere`,
  },
];

/**
 * A `@BatchConsumer`'s options, resolved: its attempts and their waits under their current names,
 * `maxAttempts` and `backoff`, whichever they were given under; each warning told to `warn`.
 */
export const resolveBatchConsumerOptions = withFormerNames(
  BatchConsumerOptionsRules,
  batchConsumerChecks,
  BATCH_FORMER_NAMES,
);
