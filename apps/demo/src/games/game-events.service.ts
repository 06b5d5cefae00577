import { Injectable } from '@nestjs/common';
import { FixedQueue, InjectFixedQueue, type FixedQueueStats, type PushResult } from 'nestjs-redis-queues';
import { DIGEST_TYPES, type GameEvent } from './dto/game-event.dto';
import { GAME_DIGEST, GAME_EVENTS } from './games.constants';
import { GameSequences } from './game-sequences';
import { GameStats, type GameCounters } from './game-stats';
import { UpstreamClient } from './upstream/upstream.client';

export interface GameView extends GameCounters {
  game: string;
  /** Waiting in the queues to be reported. */
  pending: number;
}

/** An event before the producer numbered it, as the API and the simulator make it. */
export type UnnumberedEvent = Omit<GameEvent, 'run' | 'seq'>;

/** The producer side: routes each event to its queue, numbers it there, and keeps the per-game counters. */
@Injectable()
export class GameEventsService {
  constructor(
    @InjectFixedQueue(GAME_EVENTS) private readonly live: FixedQueue<GameEvent>,
    @InjectFixedQueue(GAME_DIGEST) private readonly digest: FixedQueue<GameEvent>,
    private readonly stats: GameStats,
    private readonly sequences: GameSequences,
    private readonly upstream: UpstreamClient,
  ) {}

  /** The events of one request: each queue takes its share of them in one atomic write. */
  async track(game: string, events: UnnumberedEvent[]): Promise<PushResult> {
    const [live, digest] = await Promise.all([
      this.push(
        this.live,
        game,
        events.filter((event) => !DIGEST_TYPES.has(event.type)),
      ),
      this.push(
        this.digest,
        game,
        events.filter((event) => DIGEST_TYPES.has(event.type)),
      ),
    ]);
    const dropped = live.dropped + digest.dropped;
    this.stats.received(game, events.length, dropped);
    return { dropped };
  }

  /** One event at a time, as a busy producer sends them: the queue writes those of one event-loop turn together. */
  async trackOne(game: string, event: UnnumberedEvent): Promise<void> {
    const queue = DIGEST_TYPES.has(event.type) ? this.digest : this.live;
    const { dropped } = await this.push(queue, game, [event]);
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

  /**
   * Numbers the events and pushes them at once: numbers are taken in the order pushes are made, and a
   * queue writes one group's pushes in the order they were made, so a game's numbers are its push order.
   */
  private async push(queue: FixedQueue<GameEvent>, game: string, events: UnnumberedEvent[]): Promise<PushResult> {
    if (events.length === 0) return { dropped: 0 };
    const { run } = this.sequences;
    const first = this.sequences.take(queue.name, game, events.length);
    try {
      return await queue.pushMany(
        game,
        events.map((event, i) => ({ ...event, run, seq: first + i })),
      );
    } catch (error) {
      this.upstream.lost(queue.name, game, { notQueued: events.length });
      throw error;
    }
  }
}
