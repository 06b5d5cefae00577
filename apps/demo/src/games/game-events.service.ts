import { Injectable } from '@nestjs/common';
import { FixedQueue, InjectFixedQueue, type FixedQueueStats, type PushResult } from 'nestjs-redis-queues';
import { DIGEST_TYPES, type GameEvent } from './dto/game-event.dto';
import { GAME_DIGEST, GAME_EVENTS } from './games.constants';
import { GameStats, type GameCounters } from './game-stats';

export interface GameView extends GameCounters {
  game: string;
  /** Waiting in the queues to be reported. */
  pending: number;
}

/** The producer side: routes each event to its queue and keeps the per-game counters. */
@Injectable()
export class GameEventsService {
  constructor(
    @InjectFixedQueue(GAME_EVENTS) private readonly live: FixedQueue<GameEvent>,
    @InjectFixedQueue(GAME_DIGEST) private readonly digest: FixedQueue<GameEvent>,
    private readonly stats: GameStats,
  ) {}

  /** The events of one request: each queue takes its share of them in one atomic write. */
  async track(game: string, events: GameEvent[]): Promise<PushResult> {
    const [live, digest] = await Promise.all([
      this.live.pushMany(
        game,
        events.filter((event) => !DIGEST_TYPES.has(event.type)),
      ),
      this.digest.pushMany(
        game,
        events.filter((event) => DIGEST_TYPES.has(event.type)),
      ),
    ]);
    const dropped = live.dropped + digest.dropped;
    this.stats.received(game, events.length, dropped);
    return { dropped };
  }

  /** One event at a time, as a busy producer sends them: the queue writes those of one event-loop turn together. */
  async trackOne(game: string, event: GameEvent): Promise<void> {
    const queue = DIGEST_TYPES.has(event.type) ? this.digest : this.live;
    const { dropped } = await queue.push(game, event);
    this.stats.received(game, 1, dropped);
  }

  async queues(): Promise<Record<string, FixedQueueStats>> {
    const [live, digest] = await Promise.all([this.live.stats(), this.digest.stats()]);
    return { [GAME_EVENTS]: live, [GAME_DIGEST]: digest };
  }

  /** Every game this process has seen, busiest first. */
  async games(top?: number): Promise<GameView[]> {
    const busiest = [...this.stats.perGame()].sort(([, a], [, b]) => b.received - a.received).slice(0, top);
    return Promise.all(
      busiest.map(async ([game, counters]) => {
        const [live, digest] = await Promise.all([this.live.size(game), this.digest.size(game)]);
        return { game, pending: live + digest, ...counters };
      }),
    );
  }
}
