import { Type } from 'class-transformer';
import { Allow, IsInt, IsString, Max, Min, ValidateNested } from 'class-validator';
import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { scheduleProblem } from '../validation/schedule';
import { QueueInputError } from '../errors';
import type { BackoffOptions, MissedTicks, RecurringOptions, RepeatEvery } from '../interfaces';
import { Given, IsName } from '../validation/option-rules';
import { injectWithoutFactory, refusedAsInput } from './recurring.messages';
import { assertName } from '../validation/payload';
import { resolveOptions, type Checks, type SameKeys } from '../validation/apply-rules';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/consumer-options';
import { BackoffRules, backoffProblem, MAX_ATTEMPTS } from '../validation/queue-options';

/**
 * `@Recurring` options. Its schedule, retries and lease are a DelayQueue's: so are their limits. The
 * schedule's fields are checked together by `scheduleProblem`, as `repeat()` checks them.
 */
class RecurringOptionsRules implements SameKeys<RecurringOptions, RecurringOptionsRules> {
  @Given()
  @IsString()
  @IsName()
  name?: string;

  @Given()
  @Allow()
  cron?: string;

  @Given()
  @Allow()
  everyMs?: number;

  @Given()
  @Allow()
  tz?: string;

  @Given()
  @Allow()
  missed?: MissedTicks;

  @Given()
  @IsInt()
  @Min(1)
  @Max(MAX_HANDLER_TIMEOUT_MS)
  handlerTimeoutMs?: number;

  @Given()
  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS)
  maxAttempts?: number;

  @Given()
  @ValidateNested()
  @Type(() => BackoffRules)
  backoff?: BackoffRules;
}

const recurringChecks: Checks<RecurringOptionsRules> = (options) =>
  [scheduleProblem(options, options), options.backoff && backoffProblem(options.backoff)].filter(
    (problem): problem is string => problem !== undefined,
  );

/** A `@Recurring` method's options, checked: what its schedule, queue and consumer are made of. */
export interface RecurringPlan {
  name: string;
  schedule: RepeatSchedule;
  handlerTimeoutMs?: number;
  maxAttempts?: number;
  backoff?: BackoffOptions;
}

/** Lays what an options `useFactory` makes over the options written beside it (ConsumerFactory does it). */
export type MakeOptions = (raw: unknown, where: string) => Promise<unknown>;

/**
 * The options of `@Recurring` on `label`, written out or made by their factory at start-up, checked by
 * their rules as every decorator's are, so that every refusal speaks of the decorator (not of
 * `repeat()`, nor of the cron package).
 */
export async function resolveRecurring(raw: unknown, label: string, make: MakeOptions): Promise<RecurringPlan> {
  const where = `@Recurring on ${label}`;
  if (raw !== null && typeof raw === 'object' && 'inject' in raw && !('useFactory' in raw))
    throw injectWithoutFactory(where);
  const {
    name = label,
    cron,
    everyMs,
    tz,
    missed,
    ...rest
  } = resolveOptions(RecurringOptionsRules, await make(raw, where), where, recurringChecks);
  const every: RepeatEvery = cron !== undefined ? { cron } : { everyMs: everyMs! };
  try {
    assertName(name, 'name');
    const schedule = new RepeatSchedule(every, {
      ...(tz !== undefined && { tz }),
      ...(missed !== undefined && { missed }),
    });
    return { name, schedule, ...rest };
  } catch (error) {
    // A schedule refused as input is a mistake in the decorator.
    if (error instanceof QueueInputError) throw refusedAsInput(where, error);
    throw error;
  }
}
