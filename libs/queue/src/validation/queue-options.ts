import { Type } from 'class-transformer';
import {
  Allow,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import type {
  BackoffOptions,
  DeadLetterOptions,
  QueueBaseOptions,
  ReplicaWaitOptions,
  ResolvedQueueBaseOptions,
  SchemaClass,
} from '../interfaces';
import { QUEUE_BASE_DEFAULTS } from '../queue.defaults';
import type { SameKeys } from './apply-rules';

// The rules of the options both queue kinds take: one bound per option, whichever kind it is given to.

export const DAY_MS = 86_400_000;
/** Most deliveries of a batch or a task, and runs of a `@Recurring` tick. */
export const MAX_ATTEMPTS = 1000;
/** setTimeout's limit (2^31 - 1 ms, about 24.8 days): beyond it Node fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;
/**
 * Longest wait between two attempts under the former words of a retry (`retryDelayMs`, doubled after
 * each attempt): what they read as is `legacyBackoff`.
 */
const LEGACY_MAX_DELAY_MS = 3_600_000;

class ReplicaWaitRules implements ReplicaWaitOptions, SameKeys<ReplicaWaitOptions, ReplicaWaitRules> {
  @IsInt()
  @Min(1)
  @Max(100)
  replicas!: number;

  // WAIT with 0 blocks until the replicas answer, however long: a bound is required.
  @IsInt()
  @Min(1)
  @Max(600_000)
  timeoutMs!: number;
}

class DeadLetterRules implements Required<DeadLetterOptions>, SameKeys<DeadLetterOptions, DeadLetterRules> {
  @IsInt()
  @Min(0)
  capacity: number = QUEUE_BASE_DEFAULTS.deadLetter.capacity;

  @IsBoolean()
  keepStack: boolean = QUEUE_BASE_DEFAULTS.deadLetter.keepStack;
}

/**
 * A backoff, on a queue, a `@Recurring` or a consumer. Its waits are bounded by what a timer can wait:
 * `@BatchConsumer` waits in this process, and a longer wait between two attempts is no retry.
 */
export class BackoffRules implements Required<BackoffOptions>, SameKeys<BackoffOptions, BackoffRules> {
  @IsIn(['fixed', 'exponential'])
  type: BackoffOptions['type'] = QUEUE_BASE_DEFAULTS.backoff.type;

  @IsInt()
  @Min(0)
  @Max(MAX_TIMER_MS)
  delayMs: number = QUEUE_BASE_DEFAULTS.backoff.delayMs;

  @IsInt()
  @Min(0)
  @Max(MAX_TIMER_MS)
  maxDelayMs: number = QUEUE_BASE_DEFAULTS.backoff.maxDelayMs;
}

/** What is wrong with a backoff whose fields each passed their rules, if anything. */
export function backoffProblem({ delayMs, maxDelayMs }: Required<BackoffOptions>): string | undefined {
  return maxDelayMs < delayMs
    ? `backoff.maxDelayMs must be ≥ backoff.delayMs (got ${maxDelayMs} < ${delayMs})`
    : undefined;
}

/** The backoff a former `retryDelayMs` reads as: the same waits, doubled from it up to an hour. */
export const legacyBackoff = (retryDelayMs: number): Required<BackoffOptions> => ({
  type: 'exponential',
  delayMs: Math.min(retryDelayMs, LEGACY_MAX_DELAY_MS),
  maxDelayMs: LEGACY_MAX_DELAY_MS,
});

/** The rules of the options both queue kinds take; `FixedQueueOptionsRules` and `DelayQueueOptionsRules` add their own. */
export class QueueOptionsRules implements ResolvedQueueBaseOptions, SameKeys<QueueBaseOptions, QueueOptionsRules> {
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,100}$/, {
    message: '$property must be 1-100 characters of letters, digits, ".", "_" or "-"',
  })
  name!: string;

  @IsInt()
  @Min(1)
  @Max(16_384)
  shards: number = QUEUE_BASE_DEFAULTS.shards;

  // A dead consumer's delivery waits a lease before it is delivered again; a running one's is extended.
  @IsInt()
  @Min(100)
  @Max(DAY_MS)
  leaseMs: number = QUEUE_BASE_DEFAULTS.leaseMs;

  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS)
  maxAttempts: number = QUEUE_BASE_DEFAULTS.maxAttempts;

  @ValidateNested()
  @Type(() => BackoffRules)
  backoff = new BackoffRules();

  @ValidateNested()
  @Type(() => DeadLetterRules)
  deadLetter = new DeadLetterRules();

  @IsOptional()
  @IsInt()
  @Min(16)
  @Max(512 * 1024 * 1024)
  maxPayloadBytes?: number;

  @IsOptional()
  @ValidateNested()
  @Type(() => ReplicaWaitRules)
  waitForReplicas?: ReplicaWaitRules;

  @Allow()
  schema?: SchemaClass;

  @IsOptional()
  @IsBoolean()
  tracing?: boolean;
}

/** The cross-field rules of the options both queue kinds take. */
export function queueProblems(o: QueueOptionsRules): string[] {
  const problems: string[] = [];
  const backoff = backoffProblem(o.backoff);
  if (backoff) problems.push(backoff);
  if (o.schema !== undefined && typeof o.schema !== 'function')
    problems.push('schema must be a class decorated with class-validator');
  return problems;
}
