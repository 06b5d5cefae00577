import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DelayQueue, InjectDelayQueue } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { DemoClock } from './demo-clock';
import type { MealTask } from './dto/pet.dto';
import { PetStore } from './pet.store';
import { HOUR_MS, hungryTaskId, PET_FEEDING } from './pets.constants';
import { PetsService } from './pets.service';

/**
 * Plays a short story at start-up, so the demo shows every feeding rule without a single request:
 * rex eats a plain 4-hour meal, luna's meal gets an acceleration card an hour in, and milo holds an
 * auto-feed card, so he eats twice.
 */
@Injectable()
export class PetStory implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Pets');
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly config: DemoConfig,
    private readonly pets: PetsService,
    private readonly store: PetStore,
    private readonly clock: DemoClock,
    @InjectDelayQueue(PET_FEEDING) private readonly feeding: DelayQueue<MealTask>,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.petStory) return;
    this.play().catch((error: Error) => this.logger.error(`the pet story stopped: ${error.message}`));
  }

  onModuleDestroy(): void {
    for (const timer of this.timers) clearTimeout(timer);
  }

  private async play(): Promise<void> {
    const cast = ['rex', 'luna', 'milo'];
    // A Redis that outlived an earlier run may still hold them: the story starts from scratch.
    await Promise.all(cast.map(async (id) => Promise.all([this.store.remove(id), this.feeding.cancel(hungryTaskId(id))])));
    this.logger.log(`story: 1 pet hour = ${this.clock.real(HOUR_MS) / 1000} s; rex eats, luna gets an acceleration card, milo an auto-feed card`);
    for (const id of cast) await this.pets.feed(id);
    await this.pets.holdAutoFeed('milo');
    this.later(HOUR_MS, () => this.pets.accelerate('luna'));
  }

  private later(demoMs: number, step: () => Promise<unknown>): void {
    const timer = setTimeout(() => {
      step().catch((error: Error) => this.logger.error(`the pet story stopped: ${error.message}`));
    }, this.clock.real(demoMs));
    this.timers.push(timer);
  }
}
