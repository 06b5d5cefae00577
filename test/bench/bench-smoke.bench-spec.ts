import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, SCENARIOS, type BenchOutcome } from '../../bench/suite';

const { findRedisServer } = require('../../scripts/redis') as { findRedisServer(): string | null };

/**
 * The benchmark suite at a tiny scale: every scenario must run to the end and produce figures that
 * make sense as numbers. Their values are never asserted: timing on a shared test machine means nothing.
 */
describe('bench suite (smoke, tiny sizes)', () => {
  let dir: string;
  let outcome: BenchOutcome;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nrq-bench-'));
    outcome = await runBench({
      scale: 0.001,
      rounds: 1,
      resultsDir: dir,
      // Fresh private servers, as `npm run bench` uses: the test server is shared with other test files.
      redisUrl: findRedisServer() ? undefined : process.env.REDIS_URL,
    });
  }, 120_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every scenario', () => {
    const names = outcome.report.scenarios.map((s) => s.name);
    for (const scenario of SCENARIOS) expect(names.some((name) => name.startsWith(scenario.name))).toBe(true);
  });

  it('produces finite figures for every metric, and positive throughputs', () => {
    // Every figure out of range, named, so that a failure says which.
    const wrong: string[] = [];
    for (const scenario of outcome.report.scenarios) {
      expect(scenario.metrics.length).toBeGreaterThan(0);
      for (const metric of scenario.metrics) {
        const spreads = Object.entries(metric.spread);
        expect(spreads.length).toBeGreaterThan(0);
        // A change of INFO used_memory over the few tasks of a tiny run is within the allocator's own
        // movements and can come out below zero (MEMORY USAGE, measured beside it, cannot).
        const delta = metric.label.includes('INFO used_memory Δ');
        for (const [contender, { min, median, max }] of spreads) {
          for (const value of [min, median, max]) {
            const positive = metric.better === 'higher' ? value > 0 : delta || value >= 0;
            if (!Number.isFinite(value) || !positive)
              wrong.push(`${scenario.name} ${metric.label} ${contender}: ${value}`);
          }
        }
      }
      for (const ratio of scenario.ratios) expect(Number.isFinite(ratio.spread.median)).toBe(true);
    }
    expect(wrong).toEqual([]);
  });

  it('writes the Markdown table and the JSON results', () => {
    for (const scenario of outcome.report.scenarios) expect(outcome.markdown).toContain(`### ${scenario.name}:`);
    expect(outcome.markdown).toMatch(/\| median \(min–max\) \|/);
    expect(existsSync(outcome.jsonPath)).toBe(true);
    const json = JSON.parse(readFileSync(outcome.jsonPath, 'utf8'));
    expect(json.machine.cores).toBeGreaterThan(0);
    expect(json.machine.redis).toMatch(/^\d+\.\d+/);
    expect(json.scenarios).toHaveLength(outcome.report.scenarios.length);
  });
});
