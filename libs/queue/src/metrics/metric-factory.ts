import type { Counter, Histogram } from 'prom-client';
import { METRICS_DEFAULTS } from '../queue.defaults';
import type { MetricsRegistry, QueueMetricsOptions } from '../interfaces';

export type PromClient = typeof import('prom-client');

/**
 * Makes the metrics of one QueueMetrics: named with its prefix, in its registry, each name kept so that
 * shutdown removes exactly what was made (another instance's metrics in the same registry stay).
 */
export class MetricFactory {
  private readonly names: string[] = [];

  constructor(
    readonly prom: PromClient,
    private readonly options: QueueMetricsOptions,
  ) {}

  private get registry(): MetricsRegistry {
    return this.options.registry ?? this.prom.register;
  }

  /** The `registers` of a metric made here. */
  get registers(): never[] {
    return [this.registry as never];
  }

  name(suffix: string): string {
    const name = (this.options.prefix ?? METRICS_DEFAULTS.prefix) + suffix;
    this.names.push(name);
    return name;
  }

  counter(suffix: string, help: string, labelNames = ['queue']): Counter<string> {
    return new this.prom.Counter({ name: this.name(suffix), help, labelNames, registers: this.registers });
  }

  histogram(suffix: string, help: string, buckets: number[], labelNames = ['queue']): Histogram<string> {
    return new this.prom.Histogram({ name: this.name(suffix), help, labelNames, buckets, registers: this.registers });
  }

  /** Takes every metric made here out of the registry. */
  removeAll(): void {
    for (const name of this.names.splice(0)) this.registry.removeSingleMetric(name);
  }
}

/** The gauges of one scrape share one read of what they describe. */
const SCRAPE_READ_TTL_MS = 250;

/** `load`, called again only when its last promise is older than a scrape: the gauges of one scrape share it. */
export function onePerScrape<T>(load: () => Promise<T>): () => Promise<T> {
  let last: { at: number; read: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (last === undefined || now - last.at > SCRAPE_READ_TTL_MS) last = { at: now, read: load() };
    return last.read;
  };
}
