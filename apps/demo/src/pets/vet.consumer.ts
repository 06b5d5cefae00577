import { Injectable, Logger } from '@nestjs/common';
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
export class VetConsumer {
  private readonly logger = new Logger('Pets');
  private readonly opensAt: number;

  constructor(config: DemoConfig) {
    this.opensAt = Date.now() + config.vetClosedMs;
  }

  @DelayConsumer(VET_CHECKS, { concurrency: 4 })
  checkUp(task: VetCheck, ctx: DelayContext): void {
    const closedFor = this.opensAt - Date.now();
    if (closedFor > 0) throw new Error(`the vet is closed for another ${Math.ceil(closedFor / 1000)} s`);
    this.logger.log(`${task.petId} had a check-up at the vet: healthy (attempt ${ctx.attempt})`);
  }
}
