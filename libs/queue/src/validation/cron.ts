import { CronTime } from 'cron';

const FIELDS = [
  { name: 'second', range: '0-59' },
  { name: 'minute', range: '0-59' },
  { name: 'hour', range: '0-23' },
  { name: 'day-of-month', range: '1-31' },
  { name: 'month', range: '1-12 or jan-dec' },
  { name: 'day-of-week', range: '0-7 or sun-sat' },
] as const;

const SHAPE = "six fields with seconds ('0 */5 * * * *') or five without ('*/5 * * * *')";

/**
 * Why `cron` (in time zone `tz`) is not a schedule, in this library's words and naming the field that
 * is wrong; undefined when it is one. The cron package's own texts ("Unknown alias: eve") name no field.
 */
export function cronProblem(cron: string, tz?: string): string | undefined {
  try {
    new CronTime(cron, tz);
    return undefined;
  } catch {
    // Found below, field by field.
  }
  if (cron.trim().startsWith('@'))
    return `cron "${cron}" is not a cron macro (@yearly, @monthly, @weekly, @daily, @hourly, @minutely, @secondly): give ${SHAPE}`;
  const parts = cron.trim().split(/\s+/);
  if (parts.length < 5 || parts.length > 6)
    return `cron "${cron}" has ${parts.length} field${parts.length === 1 ? '' : 's'}: give ${SHAPE}`;
  const fields = parts.length === 5 ? FIELDS.slice(1) : FIELDS;
  for (const [i, field] of fields.entries()) {
    // Every other field a wildcard: only this one can be wrong.
    const alone = fields.map((_, j) => (j === i ? parts[i] : '*')).join(' ');
    try {
      new CronTime(alone);
    } catch {
      return `cron "${cron}": its ${field.name} field "${parts[i]}" is not valid (${field.range}, with , - / and *)`;
    }
  }
  if (tz !== undefined) return `tz "${tz}" is not an IANA time zone name (such as 'Europe/Paris')`;
  return `cron "${cron}" is not a cron expression: give ${SHAPE}`;
}
