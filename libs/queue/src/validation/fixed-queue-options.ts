import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, Max, Min, ValidateNested } from 'class-validator';
import type { FixedQueueOptions, GroupRateLimitOptions, ResolvedFixedQueueOptions } from '../interfaces';
import { FIXED_QUEUE_DEFAULTS } from '../queue.defaults';
import { shown, type Checks, type SameKeys } from './apply-rules';
import { withFormerNames, written, type FormerName } from './former-names';
import { Given } from './option-rules';
import { DAY_MS, legacyBackoff, QueueOptionsRules, queueProblems } from './queue-options';

class GroupRateLimitRules implements GroupRateLimitOptions, SameKeys<GroupRateLimitOptions, GroupRateLimitRules> {
  // Each group keeps its latest `max` start times (see the rate-limit include).
  @IsInt()
  @Min(1)
  @Max(1000)
  max!: number;

  @IsInt()
  @Min(1)
  @Max(DAY_MS)
  durationMs!: number;
}

export class FixedQueueOptionsRules
  extends QueueOptionsRules
  implements ResolvedFixedQueueOptions, SameKeys<FixedQueueOptions, FixedQueueOptionsRules>
{
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  capacity: number = FIXED_QUEUE_DEFAULTS.capacity;

  @IsInt()
  @Min(1)
  @Max(10_000)
  batchSize: number = FIXED_QUEUE_DEFAULTS.batchSize;

  @IsInt()
  @Min(0)
  @Max(DAY_MS)
  maxWaitMs: number = FIXED_QUEUE_DEFAULTS.maxWaitMs;

  @IsOptional()
  @IsInt()
  @Min(1)
  maxAgeMs?: number;

  @IsInt()
  @Min(1000)
  ttlMs: number = FIXED_QUEUE_DEFAULTS.ttlMs;

  @IsBoolean()
  ordered: boolean = FIXED_QUEUE_DEFAULTS.ordered;

  @IsIn(['at-most-once', 'at-least-once'])
  delivery = FIXED_QUEUE_DEFAULTS.delivery;

  /** The former name of `backoff`: read as it (resolveFixedQueueOptions), with its own bound. */
  @Given()
  @IsInt()
  @Min(0)
  @Max(DAY_MS)
  retryDelayMs?: number;

  @IsIn(['dead-letter', 'pause-group'])
  onExhausted = FIXED_QUEUE_DEFAULTS.onExhausted;

  @IsOptional()
  @ValidateNested()
  @Type(() => GroupRateLimitRules)
  groupRateLimit?: GroupRateLimitRules;
}

/** Largest at-least-once batch: as many messages as one pushMany, so a burial or requeue costs no more. */
const MAX_AT_LEAST_ONCE_BATCH = 4000;

export const fixedQueueChecks: Checks<FixedQueueOptionsRules> = (o, given) => {
  const problems: string[] = [];
  if (o.capacity < o.batchSize)
    problems.push(`capacity must be ≥ batchSize (got ${shown(o, given, 'capacity')}, ${shown(o, given, 'batchSize')})`);
  if (o.ttlMs <= o.maxWaitMs)
    problems.push(
      `ttlMs must be > maxWaitMs, or groups expire before they are flushed (got ${shown(o, given, 'ttlMs')}, ${shown(o, given, 'maxWaitMs')})`,
    );
  if (o.delivery === 'at-least-once' && !o.ordered)
    problems.push(
      "delivery 'at-least-once' needs ordered: true (an unacknowledged batch stays at the head of its group until acknowledged, so a group's batches are handed out one at a time)",
    );
  if (o.onExhausted === 'pause-group' && o.delivery !== 'at-least-once')
    problems.push(
      `onExhausted 'pause-group' needs delivery 'at-least-once' (at most once, a batch leaves Redis when it is claimed: there is nothing to hold) (got ${shown(o, given, 'delivery')})`,
    );
  // A dead batch is copied whole into the dead letters, and back on requeue, each in one script.
  if (o.delivery === 'at-least-once' && o.batchSize > MAX_AT_LEAST_ONCE_BATCH)
    problems.push(
      `batchSize must be ≤ ${MAX_AT_LEAST_ONCE_BATCH} with delivery 'at-least-once', so that burying or re-queueing a batch stays a short script (got ${shown(o, given, 'batchSize')})`,
    );
  problems.push(...queueProblems(o));
  return problems;
};

/** Option names a FixedQueue still reads as others. */
const FIXED_FORMER_NAMES: FormerName<FixedQueueOptionsRules>[] = [
  {
    former: 'retryDelayMs',
    current: 'backoff',
    names: 'the wait between attempts',
    read: legacyBackoff,
    advice: (retryDelayMs: number) => `backoff: ${written(legacyBackoff(retryDelayMs))}, the retry's words everywhere`,
  },
];

/**
 * A FixedQueue's options, resolved: the retry wait under its one name, `backoff`, whichever name it was
 * given under; its warning is told to `warn`.
 */
export const resolveFixedQueueOptions = withFormerNames(FixedQueueOptionsRules, fixedQueueChecks, FIXED_FORMER_NAMES);
