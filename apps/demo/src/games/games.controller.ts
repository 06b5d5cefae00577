import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post, Query } from '@nestjs/common';
import type { FixedQueueStats } from 'nestjs-redis-queues';
import { GameEventDto, GameParams, StatsQuery } from './dto/game-event.dto';
import { ParseEventsPipe } from './dto/parse-events.pipe';
import { GameEventsService, type GameView } from './game-events.service';

@Controller('games')
export class GamesController {
  constructor(private readonly events: GameEventsService) {}

  /** One event or an array of them. 202: they are queued, to be reported later (or dropped, best-effort). */
  @Post(':game/events')
  @HttpCode(HttpStatus.ACCEPTED)
  async track(
    @Param() { game }: GameParams,
    @Body(ParseEventsPipe) events: GameEventDto[],
  ): Promise<{ accepted: number; dropped: number }> {
    const now = Date.now();
    const { dropped } = await this.events.track(
      game,
      events.map(({ type, userId, ts, value }) => ({
        game,
        type,
        userId,
        ts: ts ?? now,
        ...(value === undefined ? {} : { value }),
      })),
    );
    return { accepted: events.length, dropped };
  }

  @Get('stats')
  async stats(@Query() { top }: StatsQuery): Promise<{ queues: Record<string, FixedQueueStats>; games: GameView[] }> {
    const [queues, games] = await Promise.all([this.events.queues(), this.events.games(top)]);
    return { queues, games };
  }
}
