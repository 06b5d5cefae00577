import { Injectable } from '@nestjs/common';
import {
  type BatchContext,
  type MessagesDroppedEvent,
  type MessagesExpiredEvent,
  OnQueueEvent,
} from 'nestjs-redis-queues';
import type { GameEvent } from '../dto/game-event.dto';
import { GameSequences } from '../game-sequences';
import { GameStats, type ReportKind } from '../game-stats';
import { GAME_DIGEST, GAME_EVENTS, MAX_EVENT_AGE_MS } from '../games.constants';
import { ReportSink } from './report-sink';
import type { Losses } from './sequence-check';

const TIMEOUT_MS = 5000;
const KINDS: Record<string, ReportKind> = { [GAME_EVENTS]: 'live', [GAME_DIGEST]: 'digest' };

/**
 * Sends batches to the upstream reporting service and counts what became of them. It also tells the
 * upstream which numbered events will never come (evicted, expired, dead-lettered), so that the
 * upstream can tell a gap from a loss. Those notices go to the stand-in in process, as they happen,
 * so none of them can arrive after the reports they explain.
 */
@Injectable()
export class UpstreamClient {
  constructor(
    private readonly sink: ReportSink,
    private readonly stats: GameStats,
    private readonly sequences: GameSequences,
  ) {}

  /**
   * Reports one batch. The queue already discarded what waited longer than the window; this drops
   * what happened before it, as a client may send an event long after its time.
   * Throws when the upstream refuses, so that the queue delivers the batch again.
   */
  async report(kind: ReportKind, events: GameEvent[], ctx: BatchContext): Promise<void> {
    const cutoff = Date.now() - MAX_EVENT_AGE_MS;
    const fresh = events.filter((event) => event.ts >= cutoff);
    const tooOld = events.length - fresh.length;
    if (tooOld > 0) this.sink.lost(kind, ctx.group, this.sequences.run, { tooOld });
    if (fresh.length > 0) {
      const response = await fetch(`${this.sink.url}/reports`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind, game: ctx.group, attempt: ctx.attempt, events: fresh }),
        signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(TIMEOUT_MS)]),
      });
      if (!response.ok) throw new Error(`upstream answered ${response.status}: ${await response.text()}`);
    }
    this.stats.reported(ctx.group, kind, fresh.length, tooOld);
  }

  /** A batch the upstream refused on every attempt: the queue dead-lettered it (the dashboard can re-queue it). */
  dead(kind: ReportKind, events: GameEvent[], ctx: BatchContext): void {
    this.stats.failed(ctx.group, events.length);
    this.sink.dead(kind, ctx.group, events);
  }

  /** Numbered events of this run that never reached a queue, or that a queue let go. */
  lost(queue: string, game: string, losses: Losses): void {
    this.sink.lost(KINDS[queue], game, this.sequences.run, losses);
  }

  @OnQueueEvent('messages.dropped')
  dropped({ queue, group, count }: MessagesDroppedEvent): void {
    if (queue in KINDS) this.lost(queue, group, { dropped: count });
  }

  @OnQueueEvent('messages.expired')
  expired({ queue, group, count }: MessagesExpiredEvent): void {
    if (!(queue in KINDS)) return;
    this.stats.expired(group, count);
    this.lost(queue, group, { expired: count });
  }
}
