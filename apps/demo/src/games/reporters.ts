import { Injectable, type Type } from '@nestjs/common';
import { BatchConsumer, type BatchContext } from 'nestjs-redis-queues';
import type { GameEvent } from './dto/game-event.dto';
import { GAME_DIGEST, GAME_EVENTS } from './games.constants';
import { UpstreamClient } from './upstream/upstream.client';

/**
 * Reports gameplay events as they come: a full game at once, a quiet one after its oldest event waited
 * a second. The queue is ordered and at-least-once: a game's batches come one at a time in push order,
 * and a batch the upstream refuses is delivered again (its game waits) until it is dead-lettered.
 */
@Injectable()
export class LiveReporter {
  constructor(private readonly upstream: UpstreamClient) {}

  @BatchConsumer(GAME_EVENTS, { concurrency: 8, onFailed: 'dead' })
  report(events: GameEvent[], ctx: BatchContext): Promise<void> {
    return this.upstream.report('live', events, ctx);
  }

  dead(_error: unknown, events: GameEvent[], ctx: BatchContext): void {
    this.upstream.dead('live', events, ctx);
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

    @BatchConsumer(GAME_DIGEST, { intervalMs, name: 'game-digest', onFailed: 'dead' })
    report(events: GameEvent[], ctx: BatchContext): Promise<void> {
      return this.upstream.report('digest', events, ctx);
    }

    dead(_error: unknown, events: GameEvent[], ctx: BatchContext): void {
      this.upstream.dead('digest', events, ctx);
    }
  }
  return DigestReporter;
}
