import type { RepeatOutcome } from '../../interfaces';

/** A repeat as its hash holds it (see includes/repeat-entry.lua). */
export interface RepeatEntry {
  /** The pending (or running) occurrence's tick. */
  occurrence: number;
  lastRunAt?: number;
  lastOutcome?: RepeatOutcome;
  /** The schedule's canonical text (`RepeatSchedule.text`). */
  schedule: string;
}

export function decodeRepeatEntry(entry: string): RepeatEntry {
  const [occurrence, lastRunAt, lastOutcome] = entry.split('|', 3);
  const schedule = entry.slice(occurrence.length + lastRunAt.length + lastOutcome.length + 3);
  return {
    occurrence: Number(occurrence),
    ...(lastRunAt !== '' && { lastRunAt: Number(lastRunAt) }),
    ...(lastOutcome !== '' && { lastOutcome: lastOutcome as RepeatOutcome }),
    schedule,
  };
}
