import type { RepeatOutcome } from '../../interfaces';

/** A repeat as its hash holds it (see includes/repeat-entry.lua). */
export interface RepeatEntry {
  /** The pending (or running) occurrence's tick. */
  occurrence: number;
  lastRunAt?: number;
  lastOutcome?: RepeatOutcome;
  lastSuccessAt?: number;
  /** The schedule's canonical text (`RepeatSchedule.text`). */
  schedule: string;
}

export function decodeRepeatEntry(entry: string): RepeatEntry {
  const fields = entry.split('|', 4);
  const [occurrence, lastRunAt, lastOutcome, lastSuccessAt] = fields;
  const schedule = entry.slice(fields.reduce((length, field) => length + field.length + 1, 0));
  return {
    occurrence: Number(occurrence),
    ...(lastRunAt !== '' && { lastRunAt: Number(lastRunAt) }),
    ...(lastOutcome !== '' && { lastOutcome: lastOutcome as RepeatOutcome }),
    ...(lastSuccessAt !== '' && { lastSuccessAt: Number(lastSuccessAt) }),
    schedule,
  };
}
