import { Module } from '@nestjs/common';
import { QueueModule } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { GameEvent } from './dto/game-event.dto';
import { GameEventsService } from './game-events.service';
import { GameSequences } from './game-sequences';
import { GameStats } from './game-stats';
import { BacklogAuditJob } from './backlog-audit.job';
import { GAME_DIGEST, GAME_EVENTS, MAX_EVENT_AGE_MS, MAX_EVENTS_PER_REPORT } from './games.constants';
import { GamesController } from './games.controller';
import { HeldGames } from './held-games';
import { DigestReporter, LiveReporter } from './reporters';
import { ReportingSummary } from './reporting-summary';
import { TrafficSimulator } from './traffic-simulator';
import { ReportSink } from './upstream/report-sink';
import { UpstreamClient } from './upstream/upstream.client';

/**
 * Games: per-game producers → per-game batches → upstream reports. Both queues deliver a game's
 * batches one at a time, in push order (ordered, the default), each kept in Redis until the upstream
 * took it (at-least-once); a refused batch is delivered again after half a second, then a second. A
 * game nobody plays for 10 minutes leaves no key behind (ttlMs).
 */
@Module({
  imports: [
    // Reported as they come (LiveReporter): a game's batch once it is full or its oldest event waited a
    // second. A batch refused three times pauses its game with the batch at its head rather than being
    // dead-lettered: its endpoint is likely down, and its next batches would die one after another.
    // HeldGames resumes it later; its events wait meanwhile, in order, within the capacity.
    QueueModule.registerFixedQueue({
      name: GAME_EVENTS,
      schema: GameEvent,
      capacity: 1000,
      batchSize: MAX_EVENTS_PER_REPORT,
      maxWaitMs: 1000,
      maxAgeMs: MAX_EVENT_AGE_MS,
      ttlMs: 600_000,
      delivery: 'at-least-once',
      maxAttempts: 3,
      backoff: { type: 'exponential', delayMs: 500 },
      onExhausted: 'pause-group',
      deadLetter: { capacity: 1000 },
    }),
    // Low-priority events (ad views, heartbeats), reported on a schedule (DigestReporter): a game's digest
    // waits one interval, so that each run reports what gathered since the last. A batch refused three
    // times is dead-lettered (the dashboard can re-queue it) and the game moves on.
    QueueModule.registerFixedQueueAsync({
      name: GAME_DIGEST,
      inject: [DemoConfig],
      useFactory: (config: DemoConfig) => ({
        schema: GameEvent,
        capacity: 1000,
        batchSize: MAX_EVENTS_PER_REPORT,
        maxWaitMs: config.digestIntervalMs,
        maxAgeMs: MAX_EVENT_AGE_MS,
        ttlMs: 600_000,
        delivery: 'at-least-once',
        maxAttempts: 3,
        backoff: { type: 'exponential', delayMs: 500 },
        deadLetter: { capacity: 1000 },
      }),
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
    DigestReporter,
    TrafficSimulator,
    ReportingSummary,
    BacklogAuditJob,
    HeldGames,
  ],
})
export class GamesModule {}
