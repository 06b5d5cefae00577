import { Injectable } from '@nestjs/common';
import { BatchConsumer, type BatchContext } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import type { GameEvent } from './dto/game-event.dto';
import { GAME_DIGEST, GAME_EVENTS } from './games.constants';
import { UpstreamClient } from './upstream/upstream.client';

/**
 * Reports gameplay events as they come: a full game at once, a quiet one after its oldest event waited
 * a second. The queue is ordered and at-least-once: a game's batches come one at a time in push order,
 * and a batch the upstream refuses is delivered again (its game waits); its third refusal pauses the game.
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
 * The low-priority digest: every `digestIntervalMs` of the configuration, through @nestjs/schedule,
 * reports what each game gathered since.
 */
@Injectable()
export class DigestReporter {
  constructor(private readonly upstream: UpstreamClient) {}

  @BatchConsumer(GAME_DIGEST, {
    name: 'game-digest',
    onFailed: 'dead',
    inject: [DemoConfig],
    useFactory: (config: DemoConfig) => ({ intervalMs: config.digestIntervalMs }),
  })
  report(events: GameEvent[], ctx: BatchContext): Promise<void> {
    return this.upstream.report('digest', events, ctx);
  }

  dead(_error: unknown, events: GameEvent[], ctx: BatchContext): void {
    this.upstream.dead('digest', events, ctx);
  }
}
