import { Injectable } from '@nestjs/common';

export interface ConsumerStatus {
  queue: string;
  /** `Class.method` of the consumer. */
  consumer: string;
  running: boolean;
  /** For a consumer that drains on a schedule (`cron` / `intervalMs`): the longest gap between two runs. */
  periodMs?: number;
}

/**
 * The consumers of this process and whether they run, for health checks. QueueOrchestrator keeps it;
 * a consumer is `running` from bootstrap until shutdown begins (its poll loop never ends by itself: it
 * retries Redis errors with backoff).
 */
@Injectable()
export class ConsumerStatusRegistry {
  private readonly consumers: { queue: string; consumer: string; periodMs?: number }[] = [];
  private running = false;

  add(queue: string, consumer: string): void {
    this.consumers.push({ queue, consumer });
  }

  /** The consumer drains on a schedule: its queue waits up to `periodMs` between drains by design. */
  setSchedule(queue: string, consumer: string, periodMs: number): void {
    for (const entry of this.consumers)
      if (entry.queue === queue && entry.consumer === consumer) entry.periodMs = periodMs;
  }

  setRunning(running: boolean): void {
    this.running = running;
  }

  list(): ConsumerStatus[] {
    return this.consumers.map((entry) => ({ ...entry, running: this.running }));
  }
}
