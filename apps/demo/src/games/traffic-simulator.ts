import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DemoConfig } from '../demo.config';
import type { EventType } from './dto/game-event.dto';
import { GameEventsService, type UnnumberedEvent } from './game-events.service';

const TICK_MS = 50;
/** Zipf exponent of game popularity: of 500 games, the first gets a fifth of the traffic, the last 1/5000th. */
const SKEW = 1.1;
const PLAYERS = 10_000;
/** How often each type occurs; about a third are low-priority (digest) events. */
const TYPE_WEIGHTS: [EventType, number][] = [
  ['heartbeat', 25],
  ['level_up', 22],
  ['session_start', 15],
  ['session_end', 15],
  ['ad_view', 13],
  ['purchase', 10],
];
const WARN_EVERY_MS = 5000;

/** Cumulative weights, so that a uniform draw picks an index by binary search. */
function cumulative(weights: number[]): Float64Array {
  const sums = new Float64Array(weights.length);
  let sum = 0;
  weights.forEach((weight, i) => (sums[i] = sum += weight));
  return sums.map((value) => value / sum);
}

function draw(sums: Float64Array): number {
  const u = Math.random();
  let lo = 0;
  let hi = sums.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sums[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Produces behaviour events for many games at a steady rate, through the same service as the HTTP
 * API. Popularity is skewed as in real catalogues: a few hot games fill whole batches, most trickle.
 */
@Injectable()
export class TrafficSimulator implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Simulator');
  private readonly games: string[];
  private readonly popularity: Float64Array;
  private readonly types = cumulative(TYPE_WEIGHTS.map(([, weight]) => weight));
  private timer?: NodeJS.Timeout;
  private owed = 0;
  private inFlight = 0;
  private lastWarning = 0;

  constructor(
    private readonly config: DemoConfig,
    private readonly events: GameEventsService,
  ) {
    const digits = String(config.games).length;
    this.games = Array.from({ length: config.games }, (_, i) => `com.demo.game${String(i + 1).padStart(digits, '0')}`);
    this.popularity = cumulative(this.games.map((_, i) => 1 / (i + 1) ** SKEW));
  }

  onApplicationBootstrap(): void {
    const rate = this.config.eventsPerSecond;
    if (rate === 0) return;
    this.timer = setInterval(() => this.tick(rate), TICK_MS);
    this.logger.log(
      `producing ${rate.toLocaleString('en')} events/s for ${this.games.length} games (hottest first: ${this.games.slice(0, 3).join(', ')}, ...)`,
    );
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private tick(rate: number): void {
    // More than a second of events still unwritten: Redis is not keeping up, so skip rather than pile up.
    if (this.inFlight > rate) {
      this.warn(`Redis is not keeping up (${this.inFlight} pushes in flight); skipping a tick`);
      return;
    }
    this.owed += (rate * TICK_MS) / 1000;
    const count = Math.floor(this.owed);
    this.owed -= count;
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const game = this.games[draw(this.popularity)];
      this.inFlight++;
      this.events
        .trackOne(game, this.event(game, now))
        .catch((error: Error) => this.warn(`a push failed: ${error.message}`))
        .finally(() => this.inFlight--);
    }
  }

  private event(game: string, ts: number): UnnumberedEvent {
    const type = TYPE_WEIGHTS[draw(this.types)][0];
    const userId = `player-${Math.floor(Math.random() * PLAYERS)}`;
    if (type === 'level_up') return { game, type, userId, ts, value: 1 + Math.floor(Math.random() * 100) };
    if (type === 'purchase') return { game, type, userId, ts, value: Math.round(Math.random() * 5000) / 100 };
    return { game, type, userId, ts };
  }

  private warn(message: string): void {
    if (Date.now() - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = Date.now();
    this.logger.warn(message);
  }
}
