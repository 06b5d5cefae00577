import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DemoConfig } from '../demo.config';
import { GameEventsService } from './game-events.service';
import { GameStats, type ReportingTotals } from './game-stats';
import { ReportSink } from './upstream/report-sink';

const BUSIEST = 3;
const n = (value: number): string => value.toLocaleString('en');

/** Logs, every few seconds, what was reported since the last time: a compact story, not a line per batch. */
@Injectable()
export class ReportingSummary implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Games');
  private timer?: NodeJS.Timeout;
  private last: ReportingTotals;
  private lastReported = new Map<string, number>();
  private lastAt = 0;

  constructor(
    private readonly config: DemoConfig,
    private readonly stats: GameStats,
    private readonly events: GameEventsService,
    private readonly sink: ReportSink,
  ) {
    this.last = stats.totals();
  }

  onApplicationBootstrap(): void {
    if (this.config.summaryIntervalMs === 0) return;
    this.lastAt = Date.now();
    this.timer = setInterval(() => void this.summarise(), this.config.summaryIntervalMs);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private async summarise(): Promise<void> {
    try {
      await this.log();
    } catch (error) {
      this.logger.warn(`no summary: ${(error as Error).message}`);
    }
  }

  private async log(): Promise<void> {
    const now = Date.now();
    const totals = this.stats.totals();
    const queues = Object.values(await this.events.queues());
    const pending = queues.reduce((sum, queue) => sum + queue.pending, 0);
    const seconds = ((now - this.lastAt) / 1000).toFixed(1);
    const live = totals.reported.live.events - this.last.reported.live.events;
    const digest = totals.reported.digest.events - this.last.reported.digest.events;
    const batches = (kind: 'live' | 'digest') => totals.reported[kind].batches - this.last.reported[kind].batches;
    this.logger.log(
      `${seconds} s: ${n(totals.received - this.last.received)} events in, ` +
        `${n(live + digest)} reported in ${n(batches('live') + batches('digest'))} batches ` +
        `(live ${n(live)}/${n(batches('live'))}, digest ${n(digest)}/${n(batches('digest'))}), ` +
        `dropped ${n(totals.dropped - this.last.dropped)}, expired ${n(totals.expired - this.last.expired)}, ` +
        `dead-lettered ${n(totals.failed - this.last.failed)}; ${n(pending)} pending`,
    );

    const reported = new Map([...this.stats.perGame()].map(([game, counters]) => [game, counters.reported]));
    const busiest = [...reported]
      .map(([game, events]) => [game, events - (this.lastReported.get(game) ?? 0)] as const)
      .filter(([, events]) => events > 0)
      .sort((a, b) => b[1] - a[1]);
    this.logger.log(
      `${n(busiest.length)} games reported; busiest ${
        busiest
          .slice(0, BUSIEST)
          .map(([game, events]) => `${game} ${n(events)}`)
          .join(', ') || '-'
      }`,
    );
    const sink = this.sink.totals();
    const order = sink.streams;
    this.logger.log(
      `upstream so far: ${n(sink.batches)} batches, largest ${sink.largestBatch}, oldest event ${(sink.oldestAgeMs / 1000).toFixed(1)} s, ` +
        `${n(sink.refused)} refused; ${n(order.duplicates)} duplicates, ${n(order.outOfOrder)} out of order, ` +
        `${n(order.missing)} missing (${n(order.dead)} dead-lettered, ${n(order.unexplained)} unexplained); ` +
        `${sink.violations} rule violations`,
    );
    this.last = totals;
    this.lastReported = reported;
    this.lastAt = now;
  }
}
