/** A prom-client `Registry`: its default `register`, or one of your own. */
export interface MetricsRegistry {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- prom-client's Metric is generic over its label names
  registerMetric(metric: any): void;
  removeSingleMetric(name: string): void;
}

export interface QueueMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's global `register`. */
  registry?: MetricsRegistry;
  /** Leads every metric name. Default: `QUEUE_DEFAULTS.metrics.prefix`. */
  prefix?: string;
  /** Histogram buckets, to replace the defaults. */
  buckets?: {
    /** Of `nrq_task_lateness_seconds`. */
    lateness?: number[];
    /** Of `nrq_handler_duration_seconds`. */
    duration?: number[];
    /** Of `nrq_batch_size_messages`. */
    batchSize?: number[];
  };
}
