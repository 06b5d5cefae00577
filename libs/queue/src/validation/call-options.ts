import { Allow, IsIn, IsInt, IsString, Max, Min } from 'class-validator';

import type {
  DebounceOptions,
  MissedTicks,
  ObliterateOptions,
  OnExists,
  PageOptions,
  QueueHealthLimits,
  QueueHealthOptions,
  ReconcileCallOptions,
  RepeatEvery,
  RepeatOptions,
  RescheduleOptions,
  ScheduleOptions,
  TaskTime,
  WriteRetry,
} from '../interfaces';
import { describeValue, optionKeys } from './option-violations';
import { Given, IsAnyNumber, IsName, IsTime, IsTrueOrFalse } from './option-rules';
import { applyRules, type Checks, type SameKeys } from './apply-rules';
import { IsOnExists, MAX_RETRY_MS } from './delay-queue-options';
import { badCallOptions } from './validation.messages';

// The options of every public method that takes an options object, checked like module options are, and
// for the same reason: a misspelt key (`{ delay: 5000 }`) would otherwise leave the default in force,
// silently (a task due now instead of in five seconds). Each option is checked only when given.

class TaskTimeRules implements TaskTime, SameKeys<TaskTime, TaskTimeRules> {
  @Given()
  @IsAnyNumber()
  delayMs?: number;

  @Given()
  @IsTime()
  runAt?: Date | number | string;
}

/** See `WriteRetry`: every write takes it. */
class WriteRetryRules implements WriteRetry, SameKeys<WriteRetry, WriteRetryRules> {
  @Given()
  @IsInt()
  @Min(0)
  @Max(MAX_RETRY_MS)
  retryMs?: number;

  @Given()
  @IsString()
  @IsName()
  idempotencyKey?: string;
}

class RescheduleOptionsRules
  extends TaskTimeRules
  implements RescheduleOptions, SameKeys<RescheduleOptions, RescheduleOptionsRules>
{
  @Given()
  @IsInt()
  @Min(0)
  @Max(MAX_RETRY_MS)
  retryMs?: number;

  @Given()
  @IsString()
  @IsName()
  idempotencyKey?: string;
}

class ScheduleOptionsRules
  extends TaskTimeRules
  implements ScheduleOptions, SameKeys<ScheduleOptions, ScheduleOptionsRules>
{
  @Given()
  @IsString()
  @IsName()
  id?: string;

  @Given()
  @IsOnExists()
  onExists?: OnExists;

  /** `onExists` in its older spelling: `true` is `'replace'`, `false` is `'keep'`. */
  @Given()
  @IsTrueOrFalse()
  replace?: boolean;

  /** Checked by `scheduleChecks`, as DebounceOptionsRules say. */
  @Given()
  @Allow()
  debounce?: DebounceOptions;

  @Given()
  @IsInt()
  @Min(0)
  @Max(MAX_RETRY_MS)
  retryMs?: number;

  @Given()
  @IsString()
  @IsName()
  idempotencyKey?: string;
}

class ReconcileCallRules implements ReconcileCallOptions, SameKeys<ReconcileCallOptions, ReconcileCallRules> {
  @Given()
  @IsOnExists()
  onExists?: OnExists;

  @Given()
  @IsTrueOrFalse()
  sweep?: boolean;
}

class DebounceOptionsRules implements DebounceOptions, SameKeys<DebounceOptions, DebounceOptionsRules> {
  @IsInt()
  @Min(0)
  maxWaitMs!: number;
}

const scheduleChecks: Checks<ScheduleOptionsRules> = ({ id, onExists, replace, debounce }) => {
  const problems: string[] = [];
  if (onExists !== undefined && replace !== undefined && onExists !== (replace ? 'replace' : 'keep'))
    problems.push(
      `replace: ${replace} is onExists: '${replace ? 'replace' : 'keep'}' in its older spelling, ` +
        `which contradicts onExists: '${onExists}'; give onExists alone`,
    );
  if (debounce === undefined) return problems;
  if (id === undefined)
    problems.push('debounce needs an id, the task each schedule of it pushes back (a generated id never comes twice)');
  if (onExists !== undefined && onExists !== 'replace')
    problems.push(`debounce replaces the task of its id, so it cannot be combined with onExists: '${onExists}'`);
  else if (replace === false)
    problems.push('debounce replaces the task of its id, so it cannot be combined with replace: false');
  problems.push(...callOptionProblems({ rules: DebounceOptionsRules }, debounce, 'debounce'));
  return problems;
};

class PageOptionsRules implements PageOptions, SameKeys<PageOptions, PageOptionsRules> {
  @Given()
  @IsString()
  cursor?: string;

  @Given()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;
}

class ObliterateOptionsRules implements ObliterateOptions, SameKeys<ObliterateOptions, ObliterateOptionsRules> {
  @Given()
  @IsTrueOrFalse()
  force?: boolean;
}

// Which of the two is given, and what each holds, is the schedule's to check (RepeatSchedule).
class RepeatEveryRules implements SameKeys<RepeatEvery, RepeatEveryRules> {
  @Given()
  @IsString()
  cron?: string;

  @Given()
  @IsAnyNumber()
  everyMs?: number;
}

class RepeatOptionsRules implements RepeatOptions, SameKeys<RepeatOptions, RepeatOptionsRules> {
  @Given()
  @IsString()
  tz?: string;

  @Given()
  @IsTime()
  startAt?: Date | number | string;

  @Given()
  @IsTime()
  endAt?: Date | number | string;

  @Given()
  @IsString()
  missed?: MissedTicks;
}

/** `DelayQueue.deleteDead`'s options. */
interface DeleteDeadOptions {
  olderThan?: number;
}

class DeleteDeadOptionsRules implements DeleteDeadOptions, SameKeys<DeleteDeadOptions, DeleteDeadOptionsRules> {
  /** How long ago, in ms, a task died at least. */
  @Given()
  @IsInt()
  @Min(0)
  olderThan?: number;
}

class HealthLimitsRules implements QueueHealthLimits, SameKeys<QueueHealthLimits, HealthLimitsRules> {
  @Given()
  @IsAnyNumber()
  maxBacklog?: number;

  @Given()
  @IsAnyNumber()
  maxLagMs?: number;

  @Given()
  @IsIn(['warn', 'fail'], { message: "$property must be 'warn' or 'fail'" })
  dataLoss?: 'warn' | 'fail';
}

class HealthOptionsRules
  extends HealthLimitsRules
  implements QueueHealthOptions, SameKeys<QueueHealthOptions, HealthOptionsRules>
{
  @Given()
  @IsAnyNumber()
  timeoutMs?: number;

  @Given()
  @IsAnyNumber()
  recurringGraceMs?: number;

  /** Names, or limits by queue name: checked by `healthChecks`, each limits object as the top-level ones. */
  @Given()
  @Allow()
  queues?: QueueHealthOptions['queues'];
}

const healthChecks: Checks<HealthOptionsRules> = ({ queues }) => {
  const path = 'queues';
  if (queues === undefined) return [];
  if (Array.isArray(queues))
    return queues.every((name) => typeof name === 'string')
      ? []
      : [`${path} must be queue names or limits by queue name (got an array holding something else)`];
  if (queues === null || typeof queues !== 'object')
    return [`${path} must be queue names or limits by queue name (got ${describeValue(queues)})`];
  return Object.entries(queues).flatMap(([name, limits]) =>
    callOptionProblems({ rules: HealthLimitsRules }, limits, `${path}.${name}`),
  );
};

/** A call's options: their rules class, and its cross-field rules. */
interface CallOptionRules<T extends object> {
  readonly rules: new () => T;
  readonly checks?: Checks<T>;
}

/** The rules of each public method's options, by the kind of options it takes. */
export const CALL_OPTIONS = {
  schedule: { rules: ScheduleOptionsRules, checks: scheduleChecks },
  taskTime: { rules: TaskTimeRules },
  reschedule: { rules: RescheduleOptionsRules },
  retry: { rules: WriteRetryRules },
  page: { rules: PageOptionsRules },
  obliterate: { rules: ObliterateOptionsRules },
  repeatEvery: { rules: RepeatEveryRules },
  repeat: { rules: RepeatOptionsRules },
  deleteDead: { rules: DeleteDeadOptionsRules },
  health: { rules: HealthOptionsRules, checks: healthChecks },
  reconcile: { rules: ReconcileCallRules },
};

/** Every problem of an options object, each naming its path: not an object, unknown keys, broken rules. */
function callOptionProblems<T extends object>({ rules, checks }: CallOptionRules<T>, options: unknown, path = '') {
  if (options === null || typeof options !== 'object' || Array.isArray(options) || options instanceof Date) {
    const shape = `{ ${optionKeys(rules)
      .map((key) => `${key}?`)
      .join(', ')} }`;
    return [`${path ? `${path}: ` : ''}expected an options object ${shape}, got ${describeValue(options)}`];
  }
  return applyRules(rules, options, checks, path).problems;
}

/**
 * Refuses options with a key the call does not know (naming the known key it most likely meant) or a value
 * its rules refuse, with one QueueInputError naming every problem. Undefined means "not given", for the
 * object as for each key. Call it before anything is written.
 */
export function assertCallOptions<T extends object>(call: string, options: unknown, rules: CallOptionRules<T>): void {
  if (options === undefined) return;
  const problems = callOptionProblems(rules, options);
  if (problems.length > 0) throw badCallOptions(call, problems);
}
