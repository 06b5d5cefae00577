/** A positive number from the environment, or `fallback` when the variable is unset or empty. */
export function positiveEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!(value > 0) || !Number.isFinite(value)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}
