import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, Min, ValidateNested } from 'class-validator';
import type { DelayQueueOptions, OnExists, ReconcileOptions, ResolvedDelayQueueOptions } from '../interfaces';
import { DELAY_QUEUE_DEFAULTS } from '../queue.defaults';
import type { Checks, SameKeys } from './apply-rules';
import { cronProblem } from './cron';
import { withFormerNames, type FormerName } from './former-names';
import { Given } from './option-rules';
import { DAY_MS, QueueOptionsRules, queueProblems } from './queue-options';
import { EVERY_MS_MAX } from './time';

/**
 * Longest `retryMs`: a caller waits that long at most for a call to be taken (one try under way when it
 * runs out finishes within `commandTimeoutMs`).
 */
export const MAX_RETRY_MS = 10 * 60_000;

/** What `onExists` may be, wherever it is given (a schedule, a pass, the queue's `reconcile`). */
const ON_EXISTS: readonly OnExists[] = ['replace', 'keep', 'earlier', 'later'];

/** The rule of every `onExists` option, with one wording. */
export const IsOnExists = () =>
  IsIn(ON_EXISTS, { message: "$property must be 'replace', 'keep', 'earlier' or 'later'" });

/** Below this a pass would hardly end before the next began (each lists the whole source). */
const MIN_RECONCILE_EVERY_MS = 1000;

class ReconcileRules implements ReconcileOptions, SameKeys<ReconcileOptions, ReconcileRules> {
  @Given()
  @IsInt()
  @Min(MIN_RECONCILE_EVERY_MS)
  @Max(EVERY_MS_MAX)
  everyMs?: number;

  @Given()
  @IsString()
  cron?: string;

  @Given()
  @IsOnExists()
  onExists?: OnExists;

  @Given()
  @IsBoolean({ message: '$property must be true or false' })
  sweep?: boolean;
}

export class DelayQueueOptionsRules
  extends QueueOptionsRules
  implements ResolvedDelayQueueOptions, SameKeys<DelayQueueOptions, DelayQueueOptionsRules>
{
  /** The lease's former name: read as `leaseMs` (resolveDelayQueueOptions). */
  @Given()
  @IsInt()
  @Min(100)
  @Max(DAY_MS)
  visibilityTimeoutMs?: number;

  @IsInt()
  @Min(0)
  @Max(MAX_RETRY_MS)
  retryMs: number = DELAY_QUEUE_DEFAULTS.retryMs;

  @IsOptional()
  @ValidateNested()
  @Type(() => ReconcileRules)
  reconcile?: ReconcileRules;
}

export const delayQueueChecks: Checks<DelayQueueOptionsRules> = (o) => {
  const problems = queueProblems(o);
  const { everyMs, cron } = o.reconcile ?? {};
  if (everyMs !== undefined && cron !== undefined)
    problems.push(
      `reconcile takes everyMs or cron, not both (got reconcile.everyMs=${everyMs}, reconcile.cron="${cron}")`,
    );
  else if (cron !== undefined) {
    const problem = cronProblem(cron);
    if (problem !== undefined) problems.push(`reconcile.${problem}`);
  }
  return problems;
};

/** Option names a DelayQueue still reads as others. */
const DELAY_FORMER_NAMES: FormerName<DelayQueueOptionsRules>[] = [
  {
    former: 'visibilityTimeoutMs',
    current: 'leaseMs',
    names: 'the lease',
    read: (ms: number) => ms,
    advice: () => "leaseMs, the lease's name on both queues",
  },
];

/**
 * A DelayQueue's options, resolved: the lease under its one name, `leaseMs`, whichever name it was given
 * under; its warning is told to `warn`.
 */
export const resolveDelayQueueOptions = withFormerNames(DelayQueueOptionsRules, delayQueueChecks, DELAY_FORMER_NAMES);
