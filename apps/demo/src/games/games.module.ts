import { type DynamicModule, Module } from '@nestjs/common';
import { QueueModule } from 'nestjs-redis-queues';
import type { DemoConfig } from '../demo.config';
import { GameEvent } from './dto/game-event.dto';
import { GameEventsService } from './game-events.service';
import { GameSequences } from './game-sequences';
import { GameStats } from './game-stats';
import { BacklogAuditJob } from './backlog-audit.job';
import { DELIVERY, GAME_DIGEST, GAME_EVENTS, LIVE_EXHAUSTED, REPORTING } from './games.constants';
import { GamesController } from './games.controller';
import { HeldGames } from './held-games';
import { digestReporter, LiveReporter } from './reporters';
import { ReportingSummary } from './reporting-summary';
import { TrafficSimulator } from './traffic-simulator';
import { ReportSink } from './upstream/report-sink';
import { UpstreamClient } from './upstream/upstream.client';

/** A game nobody plays for this long leaves no key behind. */
const IDLE_TTL_MS = 600_000;

/** Games: per-game producers → per-game batches → upstream reports. */
@Module({})
export class GamesModule {
  static forRoot(config: DemoConfig): DynamicModule {
    return {
      module: GamesModule,
      imports: [
        QueueModule.registerFixedQueue({
          name: GAME_EVENTS,
          ...REPORTING,
          ...DELIVERY,
          ...LIVE_EXHAUSTED,
          maxWaitMs: 1000,
          ttlMs: IDLE_TTL_MS,
          schema: GameEvent,
        }),
        // A game's digest waits one interval, so that each scheduled run reports what gathered since the last.
        QueueModule.registerFixedQueue({
          name: GAME_DIGEST,
          ...REPORTING,
          ...DELIVERY,
          maxWaitMs: config.digestIntervalMs,
          ttlMs: IDLE_TTL_MS,
          schema: GameEvent,
        }),
      ],
      controllers: [GamesController],
      providers: [
        GameStats,
        GameSequences,
        GameEventsService,
        ReportSink,
        UpstreamClient,
        LiveReporter,
        digestReporter(config.digestIntervalMs),
        TrafficSimulator,
        ReportingSummary,
        BacklogAuditJob,
        HeldGames,
      ],
    };
  }
}
