import { readFileSync, writeFileSync } from 'node:fs';
import type { BenchReport } from '../suite';
import { machineMarkdown, ratioCells, checkCells } from './report';

/**
 * BENCHMARKS.md opens with the figures of one full run, between these two lines, so that what a reader
 * meets first (and what the README quotes) is one run of one commit on one machine, never a patchwork.
 */
export const CURRENT_START = '<!-- current figures: written by `npm run bench -- --record`, not by hand -->';
export const CURRENT_END = '<!-- end of current figures -->';

/** Why a run may not replace the current figures, or undefined when it may. */
export function unrecordable(report: BenchReport, scenarios: readonly string[]): string | undefined {
  const missing = scenarios.filter((name) => !report.options.scenarios.includes(name));
  if (missing.length > 0) return `--record needs every scenario; this run left out ${missing.join(', ')}`;
  if (report.options.scale !== 1) return `--record needs BENCH_SCALE=1 (this run: ${report.options.scale})`;
  return undefined;
}

/** The current-figures block: the run's commit, machine and date, then every ratio and check of it. */
export function currentMarkdown(report: BenchReport): string {
  const { machine, options, load, startedAt } = report;
  const lines = [
    CURRENT_START,
    '',
    `Run of ${startedAt.slice(0, 10)}. ${machineMarkdown(machine)} ${options.rounds} measured rounds per contender; ` +
      `1-minute load average ${load.start.toFixed(1)} at the start, ${load.end.toFixed(1)} at the end.`,
    '',
    '| scenario | figure | median (min–max) | target | |',
    '|---|---|---:|---|---|',
  ];
  for (const result of report.scenarios) {
    for (const ratio of result.ratios) lines.push(`| \`${result.name}\` | ${ratioCells(ratio).join(' | ')} |`);
    for (const check of result.checks) lines.push(`| \`${result.name}\` | ${checkCells(result, check).join(' | ')} |`);
  }
  lines.push('', CURRENT_END);
  return lines.join('\n');
}

/** The current-figures block of a Markdown text, markers included; throws when it has none. */
export function currentBlock(text: string): string {
  const start = text.indexOf(CURRENT_START);
  const end = text.indexOf(CURRENT_END);
  if (start < 0 || end < start) throw new Error('no current-figures block (its two marker lines) in the text');
  return text.slice(start, end + CURRENT_END.length);
}

/** Replaces the current-figures block of `file` with this run's. */
export function recordCurrent(file: string, report: BenchReport): void {
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace(currentBlock(text), currentMarkdown(report)));
}
