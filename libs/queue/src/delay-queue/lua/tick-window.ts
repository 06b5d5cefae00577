/**
 * Ticks of a schedule around a process' estimate of Redis' clock, for a script to choose from by its
 * own clock (see includes/tick-window.lua): every tick in (lowerBound, last of `ticks`], `complete`
 * when the schedule has none after them, and `prev`, the latest at or before lowerBound.
 */
export interface TickWindow {
  lowerBound: number;
  prev: number | null;
  ticks: number[];
  complete: boolean;
}

/** The arguments of a tick window (see includes/tick-window.lua). */
export function tickWindowArgs({ lowerBound, prev, ticks, complete }: TickWindow): (string | number)[] {
  return [lowerBound, prev ?? -1, complete ? '1' : '0', ...ticks];
}
