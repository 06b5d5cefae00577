import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Max, Min, MinLength, ValidateNested } from 'class-validator';
import { MISSED, RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueInputError } from '../errors';
import type { BackoffOptions, MissedTicks, RecurringOptions, RepeatEvery } from '../interfaces';
import { cronProblem } from '../validation/cron';
import { EVERY_MS_MAX } from '../validation/time';
import { Given, IsName } from '../validation/option-rules';
import { injectWithoutFactory, refusedAsInput } from './recurring.messages';
import { assertName } from '../validation/payload';
import { describeValue } from '../validation/option-violations';
import { resolveOptions, type Checks, type SameKeys } from '../validation/apply-rules';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/consumer-options';
import { BackoffRules, backoffProblem, MAX_ATTEMPTS } from '../validation/queue-options';

const TZ_RULE = { message: "$property must be an IANA time zone name (such as 'Europe/Paris')" };

/** `@Recurring` options. Its schedule, retries and lease are a DelayQueue's: so are their limits. */
class RecurringOptionsRules implements SameKeys<RecurringOptions, RecurringOptionsRules> {
  @Given()
  @IsString()
  @IsName()
  name?: string;

  @Given()
  @IsString()
  cron?: string;

  @Given()
  @IsInt()
  @Min(1)
  @Max(EVERY_MS_MAX)
  everyMs?: number;

  @Given()
  @IsString(TZ_RULE)
  @MinLength(1, TZ_RULE)
  tz?: string;

  @Given()
  @IsIn(MISSED)
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

/** Why the schedule is none, if it is not: exactly one of cron and everyMs, a cron that parses in `tz`. */
function scheduleProblem({ cron, everyMs, tz }: RecurringOptionsRules): string | undefined {
  if (cron !== undefined && everyMs !== undefined)
    return `give either cron or everyMs, not both (got cron ${describeValue(cron)} and everyMs ${describeValue(everyMs)})`;
  if (everyMs !== undefined) return tz === undefined ? undefined : 'tz applies to a cron schedule only, not to everyMs';
  if (cron === undefined) return "give a schedule: { cron: '0 */5 * * * *' } or { everyMs: 60_000 }";
  if (cron.trim() === '') return `cron must be a cron expression such as '0 */5 * * * *' (got ${describeValue(cron)})`;
  return cronProblem(cron, tz);
}

const recurringChecks: Checks<RecurringOptionsRules> = (options) =>
  [scheduleProblem(options), options.backoff && backoffProblem(options.backoff)].filter(
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
