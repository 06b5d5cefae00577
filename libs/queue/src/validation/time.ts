import type { TaskTime } from '../interfaces';
import { badTime } from './validation.messages';

/** Absolute epoch ms, or ms from Redis' now. */
export type ResolvedTime = ['at' | 'in', number];

/** Longest `everyMs` of a repeat (and of a task source's passes): a year, a leap one included. */
export const EVERY_MS_MAX = 366 * 24 * 3600_000;

/** Dates beyond this are not representable (ECMAScript's limit). */
const MAX_TIME_MS = 8.64e15;

function wholeMs(value: number, what: string): number {
  if (!Number.isFinite(value)) throw badTime(`${what} must be a finite number of milliseconds, got ${value}`);
  if (!Number.isInteger(value)) throw badTime(`${what} must be whole milliseconds, got ${value}`);
  if (Math.abs(value) > MAX_TIME_MS) throw badTime(`${what} is out of range (|${value}| > ${MAX_TIME_MS})`);
  return value;
}

/** Absolute ms of a Date, epoch-ms number or date string; anything unparseable is refused. */
export function toEpochMs(runAt: unknown, what = 'runAt'): number {
  if (runAt instanceof Date) {
    const ms = runAt.getTime();
    if (Number.isNaN(ms)) throw badTime(`${what} is an invalid Date`);
    return wholeMs(ms, what);
  }
  if (typeof runAt === 'number') return wholeMs(runAt, what);
  if (typeof runAt === 'string') {
    const ms = Date.parse(runAt);
    if (Number.isNaN(ms)) throw badTime(`${what} "${runAt}" is not a date that can be parsed (use ISO 8601)`);
    return wholeMs(ms, what);
  }
  throw badTime(
    `${what} must be a Date, epoch milliseconds or an ISO 8601 string, got ${runAt === null ? 'null' : typeof runAt}`,
  );
}

/**
 * When a task is due. A time in the past means "due now" (it is kept as given, so the lateness is visible);
 * neither option means now. Relative delays are added to Redis' clock, not this process'.
 */
export function resolveTime(time: TaskTime | undefined): ResolvedTime {
  const { delayMs, runAt } = time ?? {};
  if (delayMs !== undefined && runAt !== undefined) throw badTime('Give either delayMs or runAt, not both');
  if (runAt !== undefined) return ['at', Math.max(0, toEpochMs(runAt))];
  if (delayMs !== undefined) {
    if (typeof delayMs !== 'number') throw badTime(`delayMs must be a number, got ${typeof delayMs}`);
    // The time it makes is kept within runAt's range: at least 0 (in Redis, which knows its now), and
    // no later than the last representable date (by this process' clock: a range, not a due time).
    if (wholeMs(delayMs, 'delayMs') > MAX_TIME_MS - Date.now())
      throw badTime(`delayMs is out of range: now + ${delayMs} ms is past the last representable date`);
    return ['in', delayMs];
  }
  return ['in', 0];
}

/**
 * The new time of a task being moved. Unlike `schedule`, where no time means now, a move without one
 * is a mistake (a PATCH whose field was left out): it would silently make the task due now.
 */
export function resolveNewTime(time: unknown): ResolvedTime {
  const given = typeof time === 'object' && time !== null ? (time as TaskTime) : undefined;
  if (given?.delayMs === undefined && given?.runAt === undefined)
    throw badTime(
      `reschedule(id, time) needs the new time as { runAt } or { delayMs }, got ${describeTime(time)}; ` +
        'to make the task due now, pass { delayMs: 0 }',
    );
  return resolveTime(given);
}

/** `{ delayMs: undefined }` shows its key, which JSON.stringify would hide. */
function describeTime(time: unknown): string {
  if (typeof time !== 'object' || time === null) return String(time);
  const entries = Object.entries(time).map(([key, value]) => `${key}: ${String(value)}`);
  return entries.length ? `{ ${entries.join(', ')} }` : '{}';
}

/** A relative shift, e.g. `-2 * 3600_000`. */
export function resolveDelta(deltaMs: unknown): number {
  if (typeof deltaMs !== 'number') throw badTime(`deltaMs must be a number, got ${typeof deltaMs}`);
  return wholeMs(deltaMs, 'deltaMs');
}
