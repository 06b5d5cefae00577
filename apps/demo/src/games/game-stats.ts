import { Injectable } from '@nestjs/common';

export type ReportKind = 'live' | 'digest';

export interface GameCounters {
  /** Events accepted from producers. */
  received: number;
  /** Events the upstream accepted. */
  reported: number;
  batches: number;
  /** Evicted unreported because the game held `capacity` newer events (best-effort). */
  dropped: number;
  /** Older than the reporting window when their turn came. */
  expired: number;
  /** In batches the upstream refused on every attempt (dead-lettered; a re-queue counts them again). */
  failed: number;
}

export interface ReportingTotals extends Omit<GameCounters, 'reported' | 'batches'> {
  reported: Record<ReportKind, { events: number; batches: number }>;
}

const zero = (): GameCounters => ({ received: 0, reported: 0, batches: 0, dropped: 0, expired: 0, failed: 0 });

/**
 * Per-game reporting counters of this process. The queues count only totals (their statistics must
 * stay cheap at a million groups); a per-game view is the application's to keep, here in memory.
 */
@Injectable()
export class GameStats {
  private readonly games = new Map<string, GameCounters>();
  private readonly sums: ReportingTotals = {
    received: 0,
    dropped: 0,
    expired: 0,
    failed: 0,
    reported: { live: { events: 0, batches: 0 }, digest: { events: 0, batches: 0 } },
  };

  received(game: string, events: number, dropped: number): void {
    const counters = this.of(game);
    counters.received += events;
    counters.dropped += dropped;
    this.sums.received += events;
    this.sums.dropped += dropped;
  }

  reported(game: string, kind: ReportKind, events: number, tooOld: number): void {
    const counters = this.of(game);
    if (events > 0) {
      counters.reported += events;
      counters.batches += 1;
      this.sums.reported[kind].events += events;
      this.sums.reported[kind].batches += 1;
    }
    this.expired(game, tooOld);
  }

  expired(game: string, events: number): void {
    this.of(game).expired += events;
    this.sums.expired += events;
  }

  failed(game: string, events: number): void {
    this.of(game).failed += events;
    this.sums.failed += events;
  }

  /** A copy of every game's counters. */
  perGame(): Map<string, GameCounters> {
    return new Map([...this.games].map(([game, counters]) => [game, { ...counters }]));
  }

  totals(): ReportingTotals {
    return structuredClone(this.sums);
  }

  private of(game: string): GameCounters {
    let counters = this.games.get(game);
    if (!counters) {
      counters = zero();
      this.games.set(game, counters);
    }
    return counters;
  }
}
