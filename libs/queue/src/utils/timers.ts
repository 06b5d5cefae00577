/** What `raceTimeout` resolves with when the time ran out first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `work`'s value, or TIMED_OUT once `ms` have passed without it settling (a rejection passes on).
 * The timer is cleared either way, so a race never keeps the process alive.
 */
export async function raceTimeout<T>(work: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `work`, or a rejection with `message` once `ms` have passed without it settling. */
export async function deadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  const result = await raceTimeout(work, ms);
  if (result === TIMED_OUT) throw new Error(message);
  return result;
}

/** Resolves true when `work` settles in time, false on timeout. */
export async function waitOrTimeout(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  return (await raceTimeout(work, timeoutMs)) !== TIMED_OUT;
}
