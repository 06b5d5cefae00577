import type { Spread } from './stats';
import type { MetricResult, RatioResult, ScenarioResult, Target, Unit } from './results';
import type { BenchReport } from '../suite';
import type { Machine } from './machine';

function significant(value: number, digits = 3): string {
  if (value === 0) return '0';
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return value.toFixed(Math.min(decimals, 3));
}

function humanCount(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${significant(value / 1e6)}M`;
  if (abs >= 1e3) return `${significant(value / 1e3)}k`;
  return significant(value);
}

export function formatValue(value: number, unit: Unit): string {
  if (!Number.isFinite(value)) return String(value);
  switch (unit) {
    case 'msg/s':
    case 'task/s':
      return humanCount(value);
    case 'B':
      return humanCount(Math.round(value));
    default:
      return significant(value);
  }
}

const cell = (s: Spread | undefined, unit: Unit) =>
  s ? `${formatValue(s.median, unit)} (${formatValue(s.min, unit)}–${formatValue(s.max, unit)})` : '—';

const ratioText = (value: number) => `${significant(value)}×`;
const targetText = (target: Target | undefined, ratio: boolean, unit?: Unit) =>
  target
    ? `${target.op === '>=' ? '≥' : '≤'} ${ratio ? ratioText(target.value) : `${formatValue(target.value, unit!)} ${unit}`}`
    : '';
const metText = (met: boolean | undefined) => (met === undefined ? '' : met ? 'met' : '**missed**');

function metricRow(metric: MetricResult, contenders: ScenarioResult['contenders']): string {
  return `| ${metric.label} (${metric.unit}) | ${contenders.map(({ key }) => cell(metric.spread[key], metric.unit)).join(' | ')} |`;
}

/** A ratio's cells: label, median (min–max), target, whether it was met. */
export function ratioCells(ratio: RatioResult): string[] {
  const { min, median, max } = ratio.spread;
  return [
    ratio.label,
    `${ratioText(median)} (${ratioText(min)}–${ratioText(max)})`,
    targetText(ratio.target, true),
    metText(ratio.met),
  ];
}

/** A check's cells: label, value, target, whether it was met. */
export function checkCells(result: ScenarioResult, check: ScenarioResult['checks'][number]): string[] {
  const unit = result.metrics.find((m) => m.label === check.metric)!.unit;
  return [
    check.label,
    `${formatValue(check.value, unit)} ${unit}`,
    targetText(check.target, false, unit),
    metText(check.met),
  ];
}

export function scenarioMarkdown(result: ScenarioResult): string {
  const lines = [`### ${result.name}: ${result.title}`, ''];
  const { contenders } = result;
  lines.push(`| median (min–max) | ${contenders.map((c) => c.label).join(' | ')} |`);
  lines.push(`|---|${contenders.map(() => '---:').join('|')}|`);
  for (const metric of result.metrics) lines.push(metricRow(metric, contenders));
  if (result.ratios.length > 0 || result.checks.length > 0) {
    lines.push('', '| ratio / figure | median (min–max) | target | |', '|---|---:|---|---|');
    for (const ratio of result.ratios) lines.push(`| ${ratioCells(ratio).join(' | ')} |`);
    for (const check of result.checks) lines.push(`| ${checkCells(result, check).join(' | ')} |`);
  }
  for (const note of result.notes) lines.push('', `- ${note}`);
  lines.push('');
  return lines.join('\n');
}

export function machineMarkdown(machine: Machine): string {
  return [
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB; ${machine.os}.`,
    `Redis ${machine.redis} (${machine.redisServer}), Node ${machine.node}, BullMQ ${machine.bullmq}, nestjs-redis-queues ${machine.library}` +
      `${machine.commit ? ` at ${machine.commit}` : ''}.`,
  ].join(' ');
}

export function reportMarkdown(report: BenchReport): string {
  const { machine, options, seconds, load } = report;
  const lines = [
    `## Benchmark results`,
    '',
    machineMarkdown(machine),
    `Scale ${options.scale}, ${options.rounds} measured rounds per contender, interleaved; ${Math.round(seconds)} s in all; ` +
      `1-minute load average ${load.start.toFixed(1)} at the start, ${load.end.toFixed(1)} at the end.`,
    '',
  ];
  for (const result of report.scenarios) lines.push(scenarioMarkdown(result));
  return lines.join('\n');
}
