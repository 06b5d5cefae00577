import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayConsumer, type DelayContext } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { VET_CHECKS } from './pets.constants';

export interface VetCheck {
  petId: string;
}

/**
 * Check-ups at the vet, who opens `vetClosedMs` after start-up. A check-up that comes earlier fails,
 * is tried once more, and lands in the dead letters: re-queued once the vet is open (the dashboard's
 * button at /queues does it), it succeeds.
 */
@Injectable()
export class VetConsumer implements OnApplicationBootstrap {
  private readonly logger = new Logger('Pets');
  private opens: number;

  constructor(private readonly config: DemoConfig) {
    this.opens = Date.now() + config.vetClosedMs;
  }

  /** When the vet opens (epoch ms). */
  get opensAt(): number {
    return this.opens;
  }

  // Counted again from the end of start-up, when the story schedules the check-ups and consumers run: from
  // this provider's construction, a start-up slower than vetClosedMs opened the vet before any came.
  onApplicationBootstrap(): void {
    this.opens = Date.now() + this.config.vetClosedMs;
  }

  @DelayConsumer(VET_CHECKS, { concurrency: 4 })
  checkUp(task: VetCheck, ctx: DelayContext): void {
    const closedFor = this.opens - Date.now();
    if (closedFor > 0) throw new Error(`the vet is closed for another ${Math.ceil(closedFor / 1000)} s`);
    this.logger.log(`${task.petId} had a check-up at the vet: healthy (attempt ${ctx.attempt})`);
  }
}
