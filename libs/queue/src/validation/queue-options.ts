import { plainToInstance } from 'class-transformer';
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
  validateSync,
} from 'class-validator';
import { Type } from 'class-transformer';
import {
  BATCH_CONSUMER_DEFAULTS,
  DASHBOARD_DEFAULTS,
  DELAY_CONSUMER_DEFAULTS,
  DELAY_QUEUE_DEFAULTS,
  FIXED_QUEUE_DEFAULTS,
  MODULE_DEFAULTS,
} from '../queue.defaults';

import { EVERY_MS_MAX } from '../delay-queue/repeat-schedule';
import { cronProblem } from './cron';
import { describeOptionViolations, optionKeys, unknownOption } from './option-violations';
import { directRules } from './direct-rules';
import { Given } from './option-rules';
import { badOptions, notAnOptionsObject } from './validation.messages';
import type {
  BackoffOptions,
  BatchConsumerOptions,
  DeadLetterOptions,
  DelayConsumerOptions,
  DelayQueueOptions,
  FixedQueueOptions,
  GroupRateLimitOptions,
  OnExists,
  QueueDashboardOptions,
  QueueModuleOptions,
  ReconcileOptions,
  ReplicaWaitOptions,
  ResolvedDelayQueueOptions,
  ResolvedFixedQueueOptions,
  SchemaClass,
} from '../interfaces';

const QUEUE_NAME = /^[A-Za-z0-9._-]{1,100}$/;
const QUEUE_NAME_RULE = { message: '$property must be 1-100 characters of letters, digits, ".", "_" or "-"' };
const DAY_MS = 86_400_000;
/** Most deliveries of a batch or a task, and runs of a `@Recurring` tick. */
export const MAX_ATTEMPTS = 1000;

/** Every key of any member of a union (`keyof` a union is only the keys all its members share). */
type AnyKeyOf<U> = U extends unknown ? keyof U : never;

/**
 * Implemented by every rules class, with the public options it checks: a key of either that the other
 * lacks does not compile. (`implements Options` alone lets an optional option be left out of the class.)
 */
export type SameKeys<Options, Rules> = { [K in Exclude<AnyKeyOf<Options>, keyof Rules>]-?: unknown } & Record<
  Exclude<keyof Rules, AnyKeyOf<Options>>,
  never
>;

/** `connection` is checked apart (assertConnectionShape): it becomes a client, not a setting. */
type ModuleOptions = Omit<QueueModuleOptions, 'connection'>;

export class ModuleOptionsRules implements Required<ModuleOptions>, SameKeys<ModuleOptions, ModuleOptionsRules> {
  @IsString()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, { message: 'prefix must be 1-64 characters of letters, digits, ".", "_" or "-"' })
  prefix: string = MODULE_DEFAULTS.prefix;

  @IsBoolean()
  consumers: boolean = MODULE_DEFAULTS.consumers;

  @IsInt()
  @Min(0)
  shutdownTimeoutMs: number = MODULE_DEFAULTS.shutdownTimeoutMs;

  @IsInt()
  @Min(10)
  @Max(60_000)
  idlePollMs: number = MODULE_DEFAULTS.idlePollMs;

  @IsInt()
  @Min(16)
  @Max(512 * 1024 * 1024)
  maxPayloadBytes: number = MODULE_DEFAULTS.maxPayloadBytes;

  @IsInt()
  @Min(100)
  @Max(600_000)
  commandTimeoutMs: number = MODULE_DEFAULTS.commandTimeoutMs;

  @IsIn(['fail', 'continue'])
  startup = MODULE_DEFAULTS.startup;

  @IsIn(['warn', 'fail'])
  evictionPolicy = MODULE_DEFAULTS.evictionPolicy;

  @IsBoolean()
  tracing: boolean = MODULE_DEFAULTS.tracing;
}

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

class QueueOptionsRules {
  @IsString()
  @Matches(QUEUE_NAME, QUEUE_NAME_RULE)
  name!: string;

  @IsInt()
  @Min(1)
  @Max(16_384)
  shards!: number;

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

class DeadLetterRules implements Required<DeadLetterOptions>, SameKeys<DeadLetterOptions, DeadLetterRules> {
  @IsInt()
  @Min(0)
  capacity: number = DELAY_QUEUE_DEFAULTS.deadLetter.capacity;

  @IsBoolean()
  keepStack: boolean = DELAY_QUEUE_DEFAULTS.deadLetter.keepStack;
}

export class FixedQueueOptionsRules
  extends QueueOptionsRules
  implements ResolvedFixedQueueOptions, SameKeys<FixedQueueOptions, FixedQueueOptionsRules>
{
  override shards: number = FIXED_QUEUE_DEFAULTS.shards;

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

  @IsInt()
  @Min(100)
  @Max(DAY_MS)
  leaseMs: number = FIXED_QUEUE_DEFAULTS.leaseMs;

  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS)
  maxAttempts: number = FIXED_QUEUE_DEFAULTS.maxAttempts;

  @IsInt()
  @Min(0)
  @Max(DAY_MS)
  retryDelayMs: number = FIXED_QUEUE_DEFAULTS.retryDelayMs;

  @ValidateNested()
  @Type(() => DeadLetterRules)
  deadLetter = new DeadLetterRules();

  @IsIn(['dead-letter', 'pause-group'])
  onExhausted = FIXED_QUEUE_DEFAULTS.onExhausted;

  @IsOptional()
  @ValidateNested()
  @Type(() => GroupRateLimitRules)
  groupRateLimit?: GroupRateLimitRules;
}

export class BackoffRules implements Required<BackoffOptions>, SameKeys<BackoffOptions, BackoffRules> {
  @IsIn(['fixed', 'exponential'])
  type: BackoffOptions['type'] = DELAY_QUEUE_DEFAULTS.backoff.type;

  @IsInt()
  @Min(0)
  delayMs: number = DELAY_QUEUE_DEFAULTS.backoff.delayMs;

  @IsInt()
  @Min(0)
  maxDelayMs: number = DELAY_QUEUE_DEFAULTS.backoff.maxDelayMs;
}

/**
 * Longest `retryMs`: a caller waits that long at most for a call to be taken (one try under way when it
 * runs out finishes within `commandTimeoutMs`).
 */
export const MAX_RETRY_MS = 10 * 60_000;

const ON_EXISTS: OnExists[] = ['keep', 'replace', 'earlier', 'later'];

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
  @IsIn(ON_EXISTS, { message: "$property must be 'keep', 'replace', 'earlier' or 'later'" })
  onExists?: OnExists;

  @Given()
  @IsBoolean({ message: '$property must be true or false' })
  sweep?: boolean;
}

export class DelayQueueOptionsRules
  extends QueueOptionsRules
  implements ResolvedDelayQueueOptions, SameKeys<DelayQueueOptions, DelayQueueOptionsRules>
{
  override shards: number = DELAY_QUEUE_DEFAULTS.shards;

  @IsInt()
  @Min(100)
  leaseMs: number = DELAY_QUEUE_DEFAULTS.leaseMs;

  /** The lease's former name: read as `leaseMs` (resolveDelayQueueOptions). */
  @Given()
  @IsInt()
  @Min(100)
  visibilityTimeoutMs?: number;

  @IsInt()
  @Min(1)
  @Max(MAX_ATTEMPTS)
  maxAttempts: number = DELAY_QUEUE_DEFAULTS.maxAttempts;

  @ValidateNested()
  @Type(() => BackoffRules)
  backoff = new BackoffRules();

  @ValidateNested()
  @Type(() => DeadLetterRules)
  deadLetter = new DeadLetterRules();

  @IsInt()
  @Min(0)
  @Max(MAX_RETRY_MS)
  retryMs: number = DELAY_QUEUE_DEFAULTS.retryMs;

  @IsOptional()
  @ValidateNested()
  @Type(() => ReconcileRules)
  reconcile?: ReconcileRules;
}

/** setTimeout's limit (2^31 - 1 ms, about 24.8 days): beyond it Node fires at once. */
export const MAX_HANDLER_TIMEOUT_MS = 2_147_483_647;

/** Options a batch consumer leaves unset when not given: no default applies. */
type UnsetBatchConsumerOptions = 'cron' | 'intervalMs' | 'name' | 'onFailed';

export class BatchConsumerOptionsRules
  implements
    Required<Omit<BatchConsumerOptions, UnsetBatchConsumerOptions>>,
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
  @Min(0)
  @Max(100)
  retries: number = BATCH_CONSUMER_DEFAULTS.retries;

  @IsInt()
  @Min(0)
  retryDelayMs: number = BATCH_CONSUMER_DEFAULTS.retryDelayMs;

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

/** The guard is no rule's business: QueueDashboardModule uses it as given. */
type DashboardOptions = Omit<QueueDashboardOptions, 'guard'>;

export class DashboardOptionsRules
  implements Required<DashboardOptions>, SameKeys<DashboardOptions, DashboardOptionsRules>
{
  @IsString()
  @Matches(/^[A-Za-z0-9._~\-/]*$/, { message: 'path must be a plain URL path (got "$value")' })
  path: string = DASHBOARD_DEFAULTS.path;

  @IsInt()
  @Min(1)
  @Max(1000)
  hottestGroups: number = DASHBOARD_DEFAULTS.hottestGroups;

  @IsInt()
  @Min(1)
  @Max(1000)
  upcomingTasks: number = DASHBOARD_DEFAULTS.upcomingTasks;

  @IsInt()
  @Min(1)
  @Max(1000)
  deadLetters: number = DASHBOARD_DEFAULTS.deadLetters;
}

/**
 * Cross-field rules. `given` holds the keys the caller set: a rule broken by a default says so
 * (`batchSize=128 by default`), or the caller looks for a value they never wrote.
 */
export type Checks<T> = (options: T, given: ReadonlySet<string>) => string[];

/** `key=value`, or `key=value by default` when the caller left it out. */
export function shown<T extends object>(options: T, given: ReadonlySet<string>, key: keyof T & string): string {
  return `${key}=${String(options[key])}${given.has(key) ? '' : ' by default'}`;
}

/**
 * Options laid over their rules class (its defaults filling what was left out, undefined counting as left
 * out), and every rule they break, each with the value received, nested paths in full under `path`. Keys
 * no rule knows are refused (a typo would otherwise leave the default in force, silently): every option
 * needs a rule, or `@Allow()` if it is passed through as given. Cross-field rules come from `checks`,
 * run only when each field is valid. Module, queue, consumer, decorator and per-call options all go
 * through it; `raw` is an object.
 */
export function applyRules<T extends object>(
  rules: new () => T,
  raw: object,
  checks?: Checks<T>,
  path = '',
): { options: T; problems: string[] } {
  const values = raw as Record<string, unknown>;
  const given: string[] = [];
  const problems: string[] = [];
  for (const key of Object.keys(values)) {
    if (values[key] === undefined) continue;
    // A key JSON.parse makes, which no rule sees: assigned, it would replace the prototype instead.
    if (key === '__proto__') problems.push(unknownOption(key, optionKeys(rules), path));
    else given.push(key);
  }
  const direct = directRules(rules);
  const options = direct ? new rules() : transformed(rules, values, given);
  if (direct) for (const key of given) (options as Record<string, unknown>)[key] = values[key];
  if (!direct?.(options as Record<string, unknown>)) {
    const errors = validateSync(options, { forbidUnknownValues: false, whitelist: true, forbidNonWhitelisted: true });
    problems.push(...describeOptionViolations(errors, path));
  }
  if (problems.length === 0 && checks) problems.push(...checks(options, new Set(given)));
  return { options, problems };
}

/**
 * Options whose nested ones class-transformer makes instances of their own rules classes, defaults
 * applied. Classes and callbacks (schema, onFailed) are laid over as given: it would copy them.
 */
function transformed<T extends object>(rules: new () => T, values: Record<string, unknown>, keys: string[]): T {
  const data: Record<string, unknown> = {};
  for (const key of keys) if (typeof values[key] !== 'function') data[key] = values[key];
  const options = plainToInstance(rules, data, { exposeDefaultValues: true });
  for (const key of keys)
    if (typeof values[key] === 'function') (options as Record<string, unknown>)[key] = values[key];
  return options;
}

/**
 * Module, queue and decorator options with their defaults applied, or one QueueConfigError naming every
 * broken rule with the value received (see `applyRules`).
 */
export function resolveOptions<T extends object>(
  rules: new () => T,
  raw: unknown,
  label: string,
  checks?: Checks<T>,
): T {
  if (raw === null || typeof raw !== 'object') {
    throw notAnOptionsObject(label, raw);
  }
  const { options, problems } = applyRules(rules, raw, checks);
  if (problems.length > 0) throw badOptions(label, problems);
  return options;
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
  if (o.schema !== undefined && typeof o.schema !== 'function')
    problems.push('schema must be a class decorated with class-validator');
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
  return problems;
};

/** What is wrong with a backoff whose fields each passed their rules, if anything. */
export function backoffProblem({ delayMs, maxDelayMs }: Required<BackoffOptions>): string | undefined {
  return maxDelayMs < delayMs
    ? `backoff.maxDelayMs must be ≥ backoff.delayMs (got ${maxDelayMs} < ${delayMs})`
    : undefined;
}

export const delayQueueChecks: Checks<DelayQueueOptionsRules> = (o, given) => {
  const problems: string[] = [];
  if (given.has('leaseMs') && o.visibilityTimeoutMs !== undefined && o.visibilityTimeoutMs !== o.leaseMs)
    problems.push(
      `leaseMs and visibilityTimeoutMs are two names of the lease, given different values (got leaseMs=${o.leaseMs}, ` +
        `visibilityTimeoutMs=${o.visibilityTimeoutMs}): give leaseMs alone`,
    );
  const backoff = backoffProblem(o.backoff);
  if (backoff) problems.push(backoff);
  if (o.schema !== undefined && typeof o.schema !== 'function')
    problems.push('schema must be a class decorated with class-validator');
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

/**
 * A DelayQueue's options, resolved: the lease under its one name, `leaseMs`, whichever name it was given
 * under; `renamed` is called when it came under its former one.
 */
export function resolveDelayQueueOptions(raw: unknown, label: string, renamed: () => void): ResolvedDelayQueueOptions {
  const { visibilityTimeoutMs, ...options } = resolveOptions(DelayQueueOptionsRules, raw, label, delayQueueChecks);
  if (visibilityTimeoutMs === undefined) return options;
  renamed();
  return { ...options, leaseMs: visibilityTimeoutMs };
}

export const batchConsumerChecks: Checks<BatchConsumerOptionsRules> = (o) => {
  const problems: string[] = [];
  if (o.cron !== undefined && o.intervalMs !== undefined) problems.push('use either cron or intervalMs, not both');
  if (o.onFailed !== undefined && typeof o.onFailed !== 'string' && typeof o.onFailed !== 'function') {
    problems.push('onFailed must be a method name or a function');
  }
  return problems;
};
