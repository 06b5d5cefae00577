import { Injectable, Logger } from '@nestjs/common';
import { FixedQueue, InjectFixedQueue, Recurring, type RecurringContext } from 'nestjs-redis-queues';
import type { GameEvent } from './dto/game-event.dto';
import { GAME_EVENTS } from './games.constants';

const n = (value: number): string => value.toLocaleString('en');

/**
 * Every 10 s, one line about the whole backlog of game events — once across every replica of the demo
 * (a `@Cron` would log it in each). It shows on the dashboard's Recurring card with its next and last run.
 */
@Injectable()
export class BacklogAuditJob {
  private readonly logger = new Logger('Games');

  constructor(@InjectFixedQueue(GAME_EVENTS) private readonly events: FixedQueue<GameEvent>) {}

  @Recurring({ everyMs: 10_000, name: 'games.backlog-audit', missed: 'skip', handlerTimeoutMs: 5000 })
  async audit(ctx: RecurringContext): Promise<void> {
    const stats = await this.events.stats();
    this.logger.log(
      `backlog audit (tick ${new Date(ctx.occurrence).toISOString()}): ${n(stats.pending)} events pending in ` +
        `${n(stats.groups)} games, oldest due ${n(stats.lagMs)} ms ago`,
    );
  }
}
