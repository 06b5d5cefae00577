import type { MissedTicks } from '../interfaces';
import { cronProblem } from './cron';
import { describeValue } from './option-violations';
import { EVERY_MS_MAX } from './time';

const MISSED: readonly MissedTicks[] = ['latest', 'skip', 'all'];
const GIVE_ONE = "give a schedule: { cron: '0 */5 * * * *' } or { everyMs: 60_000 }";

/**
 * Why `every` (with `tz` and `missed`) is no schedule, in the one wording of both `repeat()` and
 * `@Recurring`; undefined when it is one: exactly one of `cron` (parsing in `tz`) and `everyMs`.
 */
export function scheduleProblem(
  every: unknown,
  { tz, missed }: { tz?: unknown; missed?: unknown },
): string | undefined {
  if (every === null || typeof every !== 'object') return `${GIVE_ONE} (got ${describeValue(every)})`;
  const { cron, everyMs } = every as { cron?: unknown; everyMs?: unknown };
  if (cron !== undefined && everyMs !== undefined)
    return `give either cron or everyMs, not both (got cron ${describeValue(cron)} and everyMs ${describeValue(everyMs)})`;
  if (missed !== undefined && !MISSED.includes(missed as MissedTicks))
    return `missed must be 'latest', 'skip' or 'all' (got ${describeValue(missed)})`;
  if (tz !== undefined && (typeof tz !== 'string' || tz === ''))
    return `tz must be an IANA time zone name (such as 'Europe/Paris') (got ${describeValue(tz)})`;
  if (everyMs !== undefined) {
    if (typeof everyMs !== 'number' || !Number.isInteger(everyMs) || everyMs < 1 || everyMs > EVERY_MS_MAX)
      return `everyMs must be an integer between 1 and ${EVERY_MS_MAX} (got ${describeValue(everyMs)})`;
    return tz === undefined ? undefined : 'tz applies to a cron schedule only, not to everyMs';
  }
  if (cron === undefined) return GIVE_ONE;
  if (typeof cron !== 'string' || cron.trim() === '')
    return `cron must be a cron expression such as '0 */5 * * * *' (got ${describeValue(cron)})`;
  return cronProblem(cron, tz as string | undefined);
}
