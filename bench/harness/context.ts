import { collectGarbage } from './load';
import type { ScenarioResult } from './results';
import type { Servers } from './servers';

export interface BenchContext {
  /** Multiplies every size (and the long waits); 1 is the full suite. */
  scale: number;
  /** Measured rounds per contender. */
  rounds: number;
  servers: Servers;
  log(line: string): void;
  /** A key prefix no other measurement of this run uses. */
  prefix(label: string): string;
}

/** `n × scale`, rounded, never below `min`. */
export const scaled = (ctx: BenchContext, n: number, min = 1): number => Math.max(min, Math.round(n * ctx.scale));

/**
 * A run below this scale is the smoke test's: it proves that every scenario runs and computes its
 * figures, not what they are, so the floors that keep a scaled-down run's timings meaningful (seconds of
 * load, settling and warm-up) drop too.
 */
export const isSmoke = (ctx: BenchContext): boolean => ctx.scale < 0.01;

export interface Scenario {
  name: string;
  summary: string;
  /** One result, or several when a scenario measures several things side by side. */
  run(ctx: BenchContext): Promise<ScenarioResult | ScenarioResult[]>;
}

/**
 * Runs the contenders' rounds interleaved (A B A B …) so that drift of a noisy machine hits all of them
 * alike; an unrecorded warm-up round of each comes first when `warmup` is given.
 */
export async function interleave(
  ctx: BenchContext,
  contenders: { key: string; round(round: number, warmup: boolean): Promise<void> }[],
  warmup = true,
): Promise<void> {
  if (warmup) {
    for (const contender of contenders) {
      collectGarbage();
      await contender.round(0, true);
    }
  }
  for (let round = 1; round <= ctx.rounds; round++) {
    for (const contender of contenders) {
      ctx.log(`  round ${round}/${ctx.rounds}: ${contender.key}`);
      collectGarbage();
      await contender.round(round, false);
    }
  }
}
