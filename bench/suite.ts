import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { BenchContext, Scenario } from './harness/context';
import { describeMachine, type Machine } from './harness/machine';
import { repoRoot } from './harness/paths';
import { reportMarkdown } from './harness/report';
import type { ScenarioResult } from './harness/results';
import { Servers } from './harness/servers';
import { consumeScenario } from './scenarios/consume';
import { delayScenario } from './scenarios/delay';
import { fifoScenario } from './scenarios/fifo';
import { groupsScenario } from './scenarios/groups';
import { growthScenario } from './scenarios/growth';
import { hotGroupScenario } from './scenarios/hot-group';
import { idleScenario } from './scenarios/idle';
import { pushScenario } from './scenarios/push';
import { tracingScenario } from './scenarios/tracing';
import { recurringScenario } from './scenarios/recurring';
import { reconcileScenario } from './scenarios/reconcile';

export const SCENARIOS: Scenario[] = [
  pushScenario,
  consumeScenario,
  fifoScenario,
  hotGroupScenario,
  delayScenario,
  idleScenario,
  growthScenario,
  tracingScenario,
  recurringScenario,
  groupsScenario,
  reconcileScenario,
];

export interface BenchOptions {
  scale?: number;
  rounds?: number;
  /** Scenario names to run; all when empty. */
  only?: string[];
  /** Where the JSON goes; bench/results by default. */
  resultsDir?: string;
  /** A server to share instead of fresh private ones (REDIS_URL). */
  redisUrl?: string;
  log?: (line: string) => void;
}

export interface BenchReport {
  machine: Machine;
  options: { scale: number; rounds: number; scenarios: string[] };
  startedAt: string;
  seconds: number;
  /** 1-minute load average when the run started and ended: other work on the machine shows here. */
  load: { start: number; end: number };
  scenarios: ScenarioResult[];
}

export interface BenchOutcome {
  report: BenchReport;
  markdown: string;
  jsonPath: string;
}

export async function runBench(options: BenchOptions = {}): Promise<BenchOutcome> {
  const scale = options.scale ?? 1;
  const rounds = options.rounds ?? 3;
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`scale must be a positive number, got ${scale}`);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive integer, got ${rounds}`);
  const only = options.only ?? [];
  const unknown = only.filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown scenario(s) ${unknown.join(', ')}; choose from ${SCENARIOS.map((s) => s.name).join(', ')}`,
    );
  }
  const selected = only.length > 0 ? SCENARIOS.filter((s) => only.includes(s.name)) : SCENARIOS;
  const log = options.log ?? (() => undefined);
  const keyBase = `bench-${randomBytes(4).toString('hex')}`;
  const servers = new Servers(options.redisUrl, keyBase);
  let prefixes = 0;
  const ctx: BenchContext = { scale, rounds, servers, log, prefix: (label) => `${keyBase}-${label}-${++prefixes}` };

  const startedAt = new Date();
  const loadAtStart = os.loadavg()[0];
  const machine = await describeMachine(servers);
  const results: ScenarioResult[] = [];
  for (const scenario of selected) {
    log(`${scenario.name}: ${scenario.summary}`);
    results.push(...[await scenario.run(ctx)].flat());
  }
  const seconds = (Date.now() - startedAt.getTime()) / 1000;
  const report: BenchReport = {
    machine,
    options: { scale, rounds, scenarios: selected.map((s) => s.name) },
    startedAt: startedAt.toISOString(),
    seconds,
    load: { start: loadAtStart, end: os.loadavg()[0] },
    scenarios: results,
  };
  const dir = options.resultsDir ?? join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const jsonPath = join(dir, `bench-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  return { report, markdown: reportMarkdown(report), jsonPath };
}
