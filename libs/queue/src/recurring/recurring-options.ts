import { QueueConfigError, QueueInputError } from '../errors';
import { EVERY_MS_MAX, MISSED } from '../delay-queue/repeat-schedule';
import type { BackoffOptions, MissedTicks, RecurringOptions, RepeatEvery } from '../interfaces';
import { cronProblem } from '../validation/cron';
import { MAX_HANDLER_TIMEOUT_MS } from '../validation/queue-options';
import { describeValue, unknownOption } from '../validation/option-violations';
import { assertName } from '../validation/payload';

const WRITTEN = ['cron', 'everyMs', 'name', 'tz', 'missed', 'handlerTimeoutMs', 'maxAttempts', 'backoff'];
const FACTORY = ['inject', 'useFactory'];

/** A `@Recurring` method's options, checked: what its schedule, queue and consumer are made of. */
export interface RecurringPlan {
  name: string;
  every: RepeatEvery;
  tz?: string;
  missed?: MissedTicks;
  handlerTimeoutMs?: number;
  maxAttempts?: number;
  backoff?: BackoffOptions;
}

/** Lays what an options `useFactory` makes over the options written beside it (ConsumerFactory does it). */
export type MakeOptions = (raw: unknown, where: string) => Promise<unknown>;

/**
 * The options of `@Recurring` on `label`, written out or made by their factory at start-up, checked
 * here so that every refusal speaks of the decorator (not of `repeat()`, nor of the cron package).
 */
export async function resolveRecurring(raw: unknown, label: string, make: MakeOptions): Promise<RecurringPlan> {
  const where = `@Recurring on ${label}`;
  const refuse = (why: string): never => {
    throw new QueueConfigError(`${where}: ${why}`);
  };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    refuse(
      `expected options { cron } or { everyMs } (or { inject, useFactory } making them), got ${describeValue(raw)}`,
    );
  const factory = 'useFactory' in (raw as object) || 'inject' in (raw as object);
  for (const key of Object.keys(raw as object))
    if (!WRITTEN.includes(key) && !(factory && FACTORY.includes(key)))
      refuse(unknownOption(key, [...WRITTEN, ...FACTORY]));
  if (factory && typeof (raw as { useFactory?: unknown }).useFactory !== 'function')
    refuse('inject is given without useFactory: add useFactory: (...injected) => ({ cron } or { everyMs })');
  const made = factory ? await make(raw, where) : raw;
  if (made === null || typeof made !== 'object' || Array.isArray(made))
    refuse(`the options' useFactory made ${describeValue(made)}, not options { cron } or { everyMs }`);
  for (const key of Object.keys(made as object))
    if (!WRITTEN.includes(key)) refuse(`the options' useFactory made ${unknownOption(key, WRITTEN)}`);
  const {
    name = label,
    cron,
    everyMs,
    tz,
    missed,
    handlerTimeoutMs,
    maxAttempts,
    backoff,
  } = made as Record<keyof RecurringOptions, unknown>;

  try {
    assertName(name, 'name');
  } catch (error) {
    if (error instanceof QueueInputError) refuse(error.message);
    throw error;
  }
  if (cron !== undefined && everyMs !== undefined)
    refuse(
      `give either cron or everyMs, not both (got cron ${describeValue(cron)} and everyMs ${describeValue(everyMs)})`,
    );
  if (tz !== undefined && (typeof tz !== 'string' || tz === ''))
    refuse(`tz must be an IANA time zone name (such as 'Europe/Paris'), got ${describeValue(tz)}`);
  let every: RepeatEvery;
  if (cron !== undefined) {
    if (typeof cron !== 'string' || cron.trim() === '')
      refuse(`cron must be a cron expression such as '0 */5 * * * *', got ${describeValue(cron)}`);
    const problem = cronProblem(cron as string, tz as string | undefined);
    if (problem) refuse(problem);
    every = { cron: cron as string };
  } else if (everyMs !== undefined) {
    if (typeof everyMs !== 'number' || !Number.isInteger(everyMs) || everyMs < 1 || everyMs > EVERY_MS_MAX)
      refuse(`everyMs must be whole milliseconds from 1 to ${EVERY_MS_MAX}, got ${describeValue(everyMs)}`);
    if (tz !== undefined) refuse('tz applies to a cron schedule only, not to everyMs');
    every = { everyMs: everyMs as number };
  } else {
    return refuse("give a schedule: { cron: '0 */5 * * * *' } or { everyMs: 60_000 }");
  }
  if (missed !== undefined && !MISSED.includes(missed as MissedTicks))
    refuse(`missed must be one of ${MISSED.map((m) => `'${m}'`).join(', ')}, got ${describeValue(missed)}`);
  for (const [key, value, max] of [
    ['handlerTimeoutMs', handlerTimeoutMs, MAX_HANDLER_TIMEOUT_MS],
    ['maxAttempts', maxAttempts, Number.MAX_SAFE_INTEGER],
  ] as const)
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max))
      refuse(`${key} must be an integer from 1 to ${max}, got ${describeValue(value)}`);
  return {
    name: name as string,
    every,
    ...(tz !== undefined && { tz: tz as string }),
    ...(missed !== undefined && { missed: missed as MissedTicks }),
    ...(handlerTimeoutMs !== undefined && { handlerTimeoutMs: handlerTimeoutMs as number }),
    ...(maxAttempts !== undefined && { maxAttempts: maxAttempts as number }),
    ...(backoff !== undefined && { backoff: backoff as BackoffOptions }),
  };
}
