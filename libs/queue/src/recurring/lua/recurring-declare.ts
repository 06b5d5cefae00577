import type { DelayScript } from '../../delay-queue/delay-queue.keys';
import { kindsOf } from '../../redis/script-protocol';
import { tickWindowArgs, type TickWindow } from '../../delay-queue/lua/tick-window';

export interface RecurringDeclareInput {
  id: string;
  /** This process, as its declarations hash names it. */
  declarer: string;
  /** Its schedule's canonical text. */
  schedule: string;
  /** Who declares it, for people: the method, host and pid. */
  declaredBy: string;
  aliveMs: number;
  /** When this process last saw its schedule first declared (0: never). */
  firstDeclaredAt: number;
  keepMs: number;
  /** The schedule `window` was computed for. */
  windowFor: string;
  window: TickWindow;
}

/** A schedule that a live process declares. */
export interface LiveDeclaration {
  schedule: string;
  declaredBy: string;
  firstDeclaredAt: number;
}

export type RecurringDeclared = {
  /** The schedule in effect, and every one a live process declares (this one's included). */
  inEffect: string;
  declarations: LiveDeclaration[];
} & (
  | { status: 'created' | 'changed' | 'unchanged'; nextRunAt: number }
  /** The window missed Redis' clock, or was not for the schedule in effect: compute it again. */
  | { status: 'clock' | 'winner' | 'ended'; serverNow: number }
);

/** Declares a `@Recurring` schedule with its generation (see recurring-declare.lua). */
export const recurringDeclare: DelayScript<'recurring-declare', RecurringDeclareInput, RecurringDeclared> = {
  script: 'recurring-declare',
  keys: (shard) =>
    kindsOf(shard, ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'repeats', 'declarations']),
  args: (input) => [
    input.id,
    input.declarer,
    input.schedule,
    input.declaredBy,
    input.aliveMs,
    input.firstDeclaredAt,
    input.keepMs,
    input.windowFor,
    ...tickWindowArgs(input.window),
  ],
  decode: (reply) => {
    const [status, at, inEffect, ...rest] = reply as [RecurringDeclared['status'], number, string, ...string[]];
    const declarations: LiveDeclaration[] = [];
    for (let i = 0; i < rest.length; i += 3)
      declarations.push({ schedule: rest[i], declaredBy: rest[i + 1], firstDeclaredAt: Number(rest[i + 2]) });
    const time =
      status === 'clock' || status === 'winner' || status === 'ended'
        ? { status, serverNow: at }
        : { status, nextRunAt: at };
    return { inEffect, declarations, ...time } as RecurringDeclared;
  },
};
