import { Injectable } from '@nestjs/common';
import type { BatchContext } from 'nestjs-redis-queues';
import type { GameEvent } from '../dto/game-event.dto';
import { REPORTING } from '../games.constants';
import { GameStats, type ReportKind } from '../game-stats';
import { ReportSink } from './report-sink';

const TIMEOUT_MS = 5000;

/** Sends batches to the upstream reporting service and counts what became of them. */
@Injectable()
export class UpstreamClient {
  constructor(
    private readonly sink: ReportSink,
    private readonly stats: GameStats,
  ) {}

  /**
   * Reports one batch. The queue already discarded what waited longer than the window; this drops
   * what happened before it, as a client may send an event long after its time.
   * Throws when the upstream refuses, so that the consumer retries the batch.
   */
  async report(kind: ReportKind, events: GameEvent[], ctx: BatchContext): Promise<void> {
    const cutoff = Date.now() - REPORTING.maxAgeMs;
    const fresh = events.filter((event) => event.ts >= cutoff);
    if (fresh.length > 0) {
      const response = await fetch(`${this.sink.url}/reports`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind, game: ctx.group, events: fresh }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`upstream answered ${response.status}: ${await response.text()}`);
    }
    this.stats.reported(ctx.group, kind, fresh.length, ctx.expired + events.length - fresh.length);
  }

  /** A batch the upstream kept refusing: a FixedQueue is at-most-once, so it is counted, not delivered again. */
  lost(events: GameEvent[], ctx: BatchContext): void {
    this.stats.failed(ctx.group, events.length, ctx.expired);
  }
}
