import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { FixedQueue, type GroupPausedEvent, InjectFixedQueue, OnQueueEvent } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import type { GameEvent } from './dto/game-event.dto';
import { GAME_EVENTS } from './games.constants';

/**
 * Games the live queue holds because the upstream refused a batch of theirs on every attempt
 * (onExhausted: 'pause-group'): their events wait, in order, instead of dying batch after batch. This
 * says so, and resumes each after `resumeHeldAfterMs`, as an operator would once its upstream is back;
 * the held batch is then reported again from attempt 1. The dashboard lists held games with a resume
 * button that does it sooner. The process that paused a game resumes it: should it stop first, the game
 * stays held until resumed from the dashboard.
 */
@Injectable()
export class HeldGames implements OnApplicationShutdown {
  private readonly logger = new Logger('Games');
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly config: DemoConfig,
    @InjectFixedQueue(GAME_EVENTS) private readonly events: FixedQueue<GameEvent>,
  ) {}

  @OnQueueEvent('group.paused', { queue: GAME_EVENTS })
  held({ group, reason }: GroupPausedEvent): void {
    if (reason !== 'exhausted') return;
    const after = this.config.resumeHeldAfterMs;
    this.logger.warn(
      `game ${group} is held: the upstream refused its live batch on every attempt; ` +
        (after > 0 ? `resuming it in ${after / 1000} s` : 'resume it from the dashboard'),
    );
    if (after === 0) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.resume(group);
    }, after);
    this.timers.add(timer);
  }

  onApplicationShutdown(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private async resume(game: string): Promise<void> {
    try {
      if (await this.events.resumeGroup(game))
        this.logger.log(`game ${game} resumed: its held batch is reported again, from attempt 1`);
    } catch (error) {
      this.logger.warn(`could not resume game ${game}: ${(error as Error).message}`);
    }
  }
}
