export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: quantile(sorted, 0.5), max: sorted[sorted.length - 1] };
}

/** Linear interpolation between closest ranks, over values already sorted ascending. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - below);
}

export interface Latency {
  p50: number;
  p99: number;
  max: number;
}

export function latency(samples: Float64Array): Latency {
  const sorted = Float64Array.from(samples).sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] };
}
