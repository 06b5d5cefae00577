import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DelayQueue, InjectDelayQueue } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { DemoClock } from './demo-clock';
import type { DigestTask, MealTask } from './dto/pet.dto';
import { PetStore } from './pet.store';
import {
  digestTaskId,
  HOUR_MS,
  hungryTaskId,
  PET_DIGESTS,
  PET_FEEDING,
  VET_CHECKS,
  vetCheckId,
} from './pets.constants';
import { PetsService } from './pets.service';
import type { VetCheck } from './vet.consumer';

/**
 * Plays a short story at start-up, so the demo shows every feeding rule without a single request:
 * rex eats a plain 4-hour meal, luna's meal gets an acceleration card an hour in, and milo holds an
 * auto-feed card, so he eats twice. Their owners get a digest each (by default after 5 pet hours of quiet,
 * at most 7 after the first activity): luna's card pushes hers back, milo's second meal comes so late that
 * his is sent at the maximum wait. rex and luna also have a check-up at the vet, who opens late.
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
    @InjectDelayQueue(PET_DIGESTS) private readonly digests: DelayQueue<DigestTask>,
    @InjectDelayQueue(VET_CHECKS) private readonly vet: DelayQueue<VetCheck>,
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
    // rex and luna see the vet an hour in: while the vet is still closed, these end in the dead letters.
    // Booked first: the vet opens vetClosedMs after start-up, and the story's other steps take time.
    for (const id of ['rex', 'luna'])
      await this.vet.schedule({ petId: id }, { id: vetCheckId(id), delayMs: this.clock.real(HOUR_MS) });
    if (this.config.vetClosedMs > 0) {
      this.logger.log(
        `story: rex and luna see the vet in an hour, but the vet opens ${this.config.vetClosedMs / 1000} s from now: their check-ups will fail ` +
          'and be dead-lettered; re-queue them on the dashboard (/queues) once it is open',
      );
    }
    // A database or a Redis that outlived an earlier run may still hold them: the story starts from scratch.
    await Promise.all(
      cast.map(async (id) =>
        Promise.all([
          this.store.remove(id),
          this.feeding.cancel(hungryTaskId(id)),
          this.digests.cancel(digestTaskId(id)),
        ]),
      ),
    );
    const { petDigestQuietHours: quiet, petDigestMaxWaitHours: maxWait } = this.config;
    this.logger.log(
      `story: 1 pet hour = ${this.clock.real(HOUR_MS) / 1000} s; rex eats, luna gets an acceleration card, milo an auto-feed card; ` +
        `owners get a digest of it after ${quiet} h of quiet, at most ${maxWait} h after the first`,
    );
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
