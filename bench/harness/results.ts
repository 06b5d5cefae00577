import { median, spread, type Spread } from './stats';

export type Unit = 'msg/s' | 'task/s' | 'ms' | 'µs' | 'B' | 'MB' | 'cmd/s' | 'CPU ms' | 'CPU µs' | 'ticks';

export interface MetricSpec {
  label: string;
  unit: Unit;
  better: 'higher' | 'lower';
}

export interface Target {
  op: '>=' | '<=';
  value: number;
}

export interface MetricResult extends MetricSpec {
  /** Per contender, one value per measured round in round order. */
  rounds: Record<string, number[]>;
  spread: Record<string, Spread>;
}

export interface RatioResult {
  label: string;
  metric: string;
  /** contender keys: `of / to`, computed round by round from values measured side by side. */
  of: string;
  to: string;
  rounds: number[];
  spread: Spread;
  target?: Target;
  met?: boolean;
}

export interface ScenarioResult {
  name: string;
  title: string;
  params: Record<string, unknown>;
  contenders: { key: string; label: string }[];
  metrics: MetricResult[];
  ratios: RatioResult[];
  /** Absolute targets on one contender's median (e.g. consume ≥ 1M msg/s). */
  checks: { label: string; metric: string; contender: string; value: number; target: Target; met: boolean }[];
  notes: string[];
  seconds: number;
}

interface RatioSpec {
  label: string;
  metric: MetricSpec;
  of: string;
  to: string;
  target?: Target;
}

interface CheckSpec {
  label: string;
  metric: MetricSpec;
  contender: string;
  target: Target;
}

const meets = (value: number, target: Target) => (target.op === '>=' ? value >= target.value : value <= target.value);

/** Collects one scenario's measurements as they come, and turns them into figures at the end. */
export class Recorder {
  private readonly contenders: { key: string; label: string }[] = [];
  private readonly values = new Map<MetricSpec, Map<string, number[]>>();
  private readonly ratioSpecs: RatioSpec[] = [];
  private readonly checkSpecs: CheckSpec[] = [];
  private readonly notes: string[] = [];
  private readonly started = Date.now();

  constructor(
    readonly name: string,
    readonly title: string,
    readonly params: Record<string, unknown>,
  ) {}

  contender(key: string, label: string): this {
    this.contenders.push({ key, label });
    return this;
  }

  record(metric: MetricSpec, contender: string, value: number): void {
    let byContender = this.values.get(metric);
    if (!byContender) {
      byContender = new Map();
      this.values.set(metric, byContender);
    }
    let list = byContender.get(contender);
    if (!list) {
      list = [];
      byContender.set(contender, list);
    }
    list.push(value);
  }

  ratio(label: string, metric: MetricSpec, of: string, to: string, target?: Target): this {
    this.ratioSpecs.push({ label, metric, of, to, target });
    return this;
  }

  check(label: string, metric: MetricSpec, contender: string, target: Target): this {
    this.checkSpecs.push({ label, metric, contender, target });
    return this;
  }

  note(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  result(): ScenarioResult {
    const metrics: MetricResult[] = [];
    for (const [spec, byContender] of this.values) {
      const rounds: Record<string, number[]> = {};
      const spreads: Record<string, Spread> = {};
      for (const { key } of this.contenders) {
        const list = byContender.get(key);
        if (!list || list.length === 0) continue;
        rounds[key] = list;
        spreads[key] = spread(list);
      }
      metrics.push({ ...spec, rounds, spread: spreads });
    }
    const ratios: RatioResult[] = [];
    for (const { label, metric, of, to, target } of this.ratioSpecs) {
      const a = this.values.get(metric)?.get(of);
      const b = this.values.get(metric)?.get(to);
      if (!a || !b) continue;
      // A round whose denominator is zero (an idle consumer that sent nothing) has no ratio.
      const paired = a
        .slice(0, Math.min(a.length, b.length))
        .map((value, i) => value / b[i])
        .filter(Number.isFinite);
      if (paired.length === 0) continue;
      const s = spread(paired);
      ratios.push({
        label,
        metric: metric.label,
        of,
        to,
        rounds: paired,
        spread: s,
        target,
        met: target && meets(s.median, target),
      });
    }
    const checks: ScenarioResult['checks'] = [];
    for (const { label, metric, contender, target } of this.checkSpecs) {
      const list = this.values.get(metric)?.get(contender);
      if (!list || list.length === 0) continue;
      const value = median(list);
      checks.push({ label, metric: metric.label, contender, value, target, met: meets(value, target) });
    }
    return {
      name: this.name,
      title: this.title,
      params: this.params,
      contenders: [...this.contenders],
      metrics,
      ratios,
      checks,
      notes: [...this.notes],
      seconds: (Date.now() - this.started) / 1000,
    };
  }
}
