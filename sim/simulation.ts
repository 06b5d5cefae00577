import { fencingToken, seedTokens } from './engine';
import { previousRelease } from './previous';
import { DelayActors } from './delay';
import { FixedActors } from './fixed';
import { TaskSourceActors } from './task-source';
import { RecurringActors } from './recurring';
import { type Faults, type Recorded, Violation, World } from './world';
import { Rng } from './rng';
import { engineState } from './replay';

/** How many of each actor a run has: what shrinking takes away. */
export interface Cast {
  /** FixedQueue ordered at-least-once (onExhausted alternating by seed), then at-most-once. */
  atLeastOnce: { producers: number; consumers: number };
  atMostOnce: { producers: number; consumers: number };
  /** FixedQueue unordered (at most once); a groupRateLimit holds on it when `seed >> 1` is odd, on the at-least-once one when even. */
  unordered: { producers: number; consumers: number };
  delay: { producers: number; consumers: number };
  /** The application writing a database then its DelayQueue, and one process running its task source's passes. */
  source: { producers: number };
  /** Processes declaring one `@Recurring` schedule and running its ticks. */
  recurring: { declarers: number };
}

export const FULL_CAST: Cast = {
  atLeastOnce: { producers: 2, consumers: 2 },
  atMostOnce: { producers: 1, consumers: 2 },
  unordered: { producers: 1, consumers: 2 },
  delay: { producers: 2, consumers: 2 },
  source: { producers: 2 },
  recurring: { declarers: 2 },
};

export const FAULTS: Faults = {
  lostReply: 0.02,
  crash: 0.003,
  stall: 0.003,
  shutdown: 0.004,
  dataLoss: 0.0003,
  clockJump: 0.002,
};

/**
 * Processes that may run the previous release (a rolling deploy under way): FixedQueues' producers,
 * consumers, sweepers and operators, and DelayQueue consumers. Not DelayQueue nor task-source
 * producers: their retries rely on call keys, which that release does not send (docs/upgrading.md).
 */
const runsPrevious = (kind: string) => /^(alo|amo|uno)\./.test(kind) || /^dq\.consumer/.test(kind);
const PREVIOUS_SHARE = 0.3;

/** Steps of a run before its drain, and the simulated time the drain gets. */
export const STEPS = 3000;
const DRAIN_MS = 30_000;

export interface Outcome {
  seed: number;
  cast: Cast;
  steps: number;
  scriptCalls: number;
  simulatedMs: number;
  hash: string;
  history: string[];
  recorded: Recorded[];
  violation?: Violation;
  summary: string[];
  /** The engine's keys and values at the end (see replay.ts), when asked for (`recorded` is then kept too). */
  state?: string[];
}

/** One run of a seed: the same seed and cast give the same history, byte for byte. */
export async function runSeed(
  seed: number,
  cast: Cast = FULL_CAST,
  steps = STEPS,
  withState = false,
): Promise<Outcome> {
  const world = await World.create(seed, FAULTS, withState);
  const tokens = new Rng(seed ^ 0x5eed);
  const restoreTokens = seedTokens(() => tokens.int(0, 255), fencingToken, previousRelease().fencingToken);
  world.mixVersions(runsPrevious, PREVIOUS_SHARE);
  const fixed: FixedActors[] = [];
  const rated = { max: 2, durationMs: 1000 };
  const aloRated = (seed >>> 1) % 2 === 0;
  if (cast.atLeastOnce.consumers + cast.atLeastOnce.producers > 0)
    fixed.push(
      new FixedActors(world, {
        name: 'alo',
        mode: 'at-least-once',
        ordered: true,
        onExhausted: seed % 2 === 0 ? 'pause-group' : 'dead-letter',
        groupRateLimit: aloRated ? rated : undefined,
        groups: 4,
        ...cast.atLeastOnce,
      }),
    );
  if (cast.atMostOnce.consumers + cast.atMostOnce.producers > 0)
    fixed.push(
      new FixedActors(world, {
        name: 'amo',
        mode: 'at-most-once',
        ordered: true,
        onExhausted: 'dead-letter',
        groups: 3,
        ...cast.atMostOnce,
      }),
    );
  if (cast.unordered.consumers + cast.unordered.producers > 0)
    fixed.push(
      new FixedActors(world, {
        name: 'uno',
        mode: 'at-most-once',
        ordered: false,
        onExhausted: 'dead-letter',
        groupRateLimit: aloRated ? undefined : rated,
        groups: 3,
        ...cast.unordered,
      }),
    );
  const delay: DelayActors[] = [];
  if (cast.delay.consumers + cast.delay.producers > 0)
    delay.push(new DelayActors(world, { name: 'dq', ids: 6, ...cast.delay }));
  const sources = cast.source.producers > 0 ? [new TaskSourceActors(world, 'ts', cast.source.producers)] : [];
  const recurring = cast.recurring.declarers > 0 ? [new RecurringActors(world, 'rec', cast.recurring.declarers)] : [];
  const actors = [...fixed, ...delay];
  for (const source of [...sources, ...recurring]) {
    source.start();
    world.onDataLoss(() => source.dataLost());
  }
  world.onDataLoss(() => actors.forEach((actor) => actor.dataLost()));
  const summary: string[] = [];
  let violation: Violation | undefined;
  try {
    for (const actor of actors) actor.start();
    while (world.steps < steps && (await world.step()));
    world.drain();
    for (const actor of actors) actor.drain();
    const end = world.now() + DRAIN_MS;
    while (world.now() < end && (await world.step()));
    const audit = world.auditor();
    let done = false;
    const audited = world.guard(
      (async () => {
        for (const actor of [...fixed, ...delay]) summary.push(await actor.account(audit));
      })().then(() => {
        done = true;
      }),
    );
    while (!done && (await world.step()));
    await audited;
    await world.step();
    for (const audited of [...sources, ...recurring]) audited.audit();
  } catch (error) {
    if (!(error instanceof Violation)) throw error;
    violation = error;
  } finally {
    restoreTokens();
  }
  return {
    ...(withState && { state: await engineState(world) }),
    seed,
    cast,
    steps: world.steps,
    scriptCalls: world.scriptCalls,
    simulatedMs: world.now() - world.startMs,
    hash: world.historyHash(),
    history: world.history,
    recorded: world.recorded,
    violation,
    summary,
  };
}

/**
 * The smallest run of `seed` found that still breaks the same promise: fewer actors, one at a time,
 * each run stopping at the step that broke it (so its history ends there).
 */
export async function shrink(failed: Outcome): Promise<Outcome> {
  let best = failed;
  let improved = true;
  while (improved) {
    improved = false;
    for (const smaller of fewer(best.cast)) {
      const outcome = await runSeed(best.seed, smaller, best.steps);
      if (outcome.violation?.invariant === failed.violation?.invariant && outcome.steps <= best.steps) {
        best = outcome;
        improved = true;
        break;
      }
    }
  }
  return best;
}

function fewer(cast: Cast): Cast[] {
  const casts: Cast[] = [];
  if (cast.source.producers > 0) casts.push({ ...cast, source: { producers: cast.source.producers - 1 } });
  if (cast.recurring.declarers > 0) casts.push({ ...cast, recurring: { declarers: cast.recurring.declarers - 1 } });
  for (const queue of ['atLeastOnce', 'atMostOnce', 'unordered', 'delay'] as const)
    for (const role of ['producers', 'consumers'] as const)
      if (cast[queue][role] > 0) casts.push({ ...cast, [queue]: { ...cast[queue], [role]: cast[queue][role] - 1 } });
  return casts;
}

/**
 * The cast as `--cast` takes it: producers then consumers of each queue, then the task source's
 * producers, then the `@Recurring` declarers.
 */
export function castText(cast: Cast): string {
  return [cast.atLeastOnce, cast.atMostOnce, cast.unordered, cast.delay]
    .flatMap((q) => [q.producers, q.consumers])
    .concat(cast.source.producers, cast.recurring.declarers)
    .join(',');
}

export function parseCast(text: string): Cast {
  const n = text.split(',').map(Number);
  if (n.length !== 10 || n.some((x) => !Number.isInteger(x) || x < 0))
    throw new Error(`--cast takes ten counts, got ${text}`);
  return {
    atLeastOnce: { producers: n[0], consumers: n[1] },
    atMostOnce: { producers: n[2], consumers: n[3] },
    unordered: { producers: n[4], consumers: n[5] },
    delay: { producers: n[6], consumers: n[7] },
    source: { producers: n[8] },
    recurring: { declarers: n[9] },
  };
}

/** What a broken promise prints: the seed, the promise and its sentence, and the history that broke it. */
export function report(outcome: Outcome, tail = 80): string {
  const { violation, seed, cast } = outcome;
  const lines = [
    `SEED=${seed}`,
    `broken: ${violation?.invariant}: ${violation?.detail}`,
    `promise: ${violation?.quote}`,
    `replay: npm run simulate -- --seed ${seed} --cast ${castText(cast)}`,
    `history (${outcome.history.length} lines, ${outcome.steps} steps; the last ${Math.min(tail, outcome.history.length)}):`,
    ...outcome.history.slice(-tail).map((line) => `  ${line}`),
  ];
  return lines.join('\n');
}
