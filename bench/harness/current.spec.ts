import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchReport } from '../suite';
import { CURRENT_END, CURRENT_START, currentBlock, currentMarkdown, recordCurrent, unrecordable } from './current';
import { Recorder, type MetricSpec } from './results';

const FIRE: MetricSpec = { label: 'fire throughput', unit: 'task/s', better: 'higher' };

function report(options: Partial<BenchReport['options']> = {}): BenchReport {
  const recorder = new Recorder('delay', 'DelayQueue vs BullMQ', {})
    .contender('lib', 'library')
    .contender('bull', 'BullMQ')
    .ratio('library / BullMQ: fire throughput', FIRE, 'lib', 'bull', { op: '>=', value: 3 })
    .check('library fire throughput', FIRE, 'lib', { op: '>=', value: 10_000 });
  for (const [lib, bull] of [
    [40_000, 10_000],
    [36_000, 9_000],
    [30_000, 10_000],
  ]) {
    recorder.record(FIRE, 'lib', lib);
    recorder.record(FIRE, 'bull', bull);
  }
  return {
    machine: {
      cpu: 'a CPU',
      cores: 2,
      memoryGiB: 24,
      os: 'Linux',
      node: 'v20',
      redis: '7.0.15',
      redisServer: 'private',
      bullmq: '5.0.0',
      library: '0.2.0',
      commit: 'abc1234',
    },
    options: { scale: 1, rounds: 3, scenarios: ['delay'], ...options },
    startedAt: '2026-11-28T14:00:00.000Z',
    seconds: 60,
    load: { start: 0.4, end: 1.1 },
    scenarios: [recorder.result()],
  };
}

describe('current figures', () => {
  it('give the commit, the machine, the date and every ratio and check of the run', () => {
    const text = currentMarkdown(report());
    expect(text.startsWith(CURRENT_START) && text.endsWith(CURRENT_END)).toBe(true);
    expect(text).toContain('Run of 2026-11-28');
    expect(text).toContain('at abc1234');
    expect(text).toContain('| `delay` | library / BullMQ: fire throughput | 4.00× (3.00×–4.00×) | ≥ 3.00× | met |');
    expect(text).toContain('| `delay` | library fire throughput | 36.0k task/s | ≥ 10.0k task/s | met |');
  });

  it('replace only the block between the markers of the file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'current-')), 'BENCHMARKS.md');
    writeFileSync(file, `# Benchmarks\n\nbefore\n\n${CURRENT_START}\nold figures\n${CURRENT_END}\n\nafter\n`);
    recordCurrent(file, report());
    const written = readFileSync(file, 'utf8');
    expect(written).not.toContain('old figures');
    expect(written.startsWith('# Benchmarks\n\nbefore\n\n')).toBe(true);
    expect(written.endsWith(`${CURRENT_END}\n\nafter\n`)).toBe(true);
    expect(currentBlock(written)).toBe(currentMarkdown(report()));
  });

  it('are refused from a run of some scenarios or of another scale', () => {
    expect(unrecordable(report(), ['delay'])).toBeUndefined();
    expect(unrecordable(report(), ['delay', 'push'])).toMatch(/left out push/);
    expect(unrecordable(report({ scale: 0.2 }), ['delay'])).toMatch(/BENCH_SCALE=1/);
  });

  it('are what a text without the markers cannot give', () => {
    expect(() => currentBlock('# Benchmarks\n')).toThrow(/no current-figures block/);
  });
});

describe("the README's figures", () => {
  it('are all in the current figures of BENCHMARKS.md', () => {
    const root = join(__dirname, '..', '..');
    const current = currentBlock(readFileSync(join(root, 'BENCHMARKS.md'), 'utf8'));
    const quoted = readFileSync(join(root, 'README.md'), 'utf8').match(/\d[\d.,]*×/g) ?? [];
    expect(quoted.length).toBeGreaterThan(0);
    expect(quoted.filter((figure) => !current.includes(figure))).toEqual([]);
  });
});
