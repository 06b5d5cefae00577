import { Injectable, type Type } from '@nestjs/common';
import { BatchConsumer, type BatchContext } from 'nestjs-redis-queues';
import type { GameEvent } from './dto/game-event.dto';
import { GAME_DIGEST, GAME_EVENTS } from './games.constants';
import { UpstreamClient } from './upstream/upstream.client';

/** A refused report is tried twice more before its batch counts as failed. */
const RETRIES = { retries: 2, retryDelayMs: 200, onFailed: 'lost' } as const;

/** Reports gameplay events as they come: a full game at once, a quiet one after its oldest event waited a second. */
@Injectable()
export class LiveReporter {
  constructor(private readonly upstream: UpstreamClient) {}

  @BatchConsumer(GAME_EVENTS, { concurrency: 8, ...RETRIES })
  report(events: GameEvent[], ctx: BatchContext): Promise<void> {
    return this.upstream.report('live', events, ctx);
  }

  lost(_error: unknown, events: GameEvent[], ctx: BatchContext): void {
    this.upstream.lost(events, ctx);
  }
}

/**
 * The low-priority digest: every `intervalMs`, through @nestjs/schedule, reports what each game
 * gathered since. Decorator arguments are fixed when a class is defined, and the interval comes from
 * the configuration, so the class is defined for the configured interval.
 */
export function digestReporter(intervalMs: number): Type<unknown> {
  @Injectable()
  class DigestReporter {
    constructor(private readonly upstream: UpstreamClient) {}

    @BatchConsumer(GAME_DIGEST, { intervalMs, name: 'game-digest', ...RETRIES })
    report(events: GameEvent[], ctx: BatchContext): Promise<void> {
      return this.upstream.report('digest', events, ctx);
    }

    lost(_error: unknown, events: GameEvent[], ctx: BatchContext): void {
      this.upstream.lost(events, ctx);
    }
  }
  return DigestReporter;
}
