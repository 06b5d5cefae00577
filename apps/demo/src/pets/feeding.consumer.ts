import { Injectable, Logger } from '@nestjs/common';
import { DelayConsumer, DelayQueue, InjectDelayQueue, type DelayContext } from 'nestjs-redis-queues';
import { DemoClock } from './demo-clock';
import { MealTask } from './dto/pet.dto';
import { PetStore } from './pet.store';
import { hungryTaskId, MEAL_MS, PET_FEEDING } from './pets.constants';
import { PetsService } from './pets.service';

/**
 * Ends meals when their `hungry:<petId>` task fires. Delivery is at-least-once, so every outcome is
 * decided by one transaction on the pet's row that checks the meal's number (PetStore.finishMeal): a
 * repeated delivery changes nothing.
 */
@Injectable()
export class FeedingConsumer {
  private readonly logger = new Logger('Pets');

  constructor(
    @InjectDelayQueue(PET_FEEDING) private readonly feeding: DelayQueue<MealTask>,
    private readonly store: PetStore,
    private readonly pets: PetsService,
    private readonly clock: DemoClock,
  ) {}

  @DelayConsumer(PET_FEEDING, { concurrency: 16 })
  async onMealEnd(task: MealTask, ctx: DelayContext): Promise<void> {
    const { petId, meal } = task;
    const end = await this.store.finishMeal(petId, meal, await this.clock.now(), this.clock.real(MEAL_MS));
    switch (end.outcome) {
      case 'hungry':
        this.logger.log(
          `${petId} is hungry: meal ${meal} lasted ${this.clock.format(end.at - end.startedAt)} (task fired ${ctx.firedAt - ctx.dueAt} ms after its time)`,
        );
        return;
      case 'auto-fed':
        // Replaces this very task (same id): the next meal's task waits for this delivery, whose
        // acknowledgement makes it due rather than deleting it.
        await this.pets.scheduleMealEnd(end.pet);
        this.logger.log(
          `${petId} was fed automatically (meal ${meal + 1}, auto-feed card used), for another ${this.clock.format(this.clock.real(MEAL_MS))}`,
        );
        await this.pets.scheduleDigest(petId);
        return;
      case 'auto-fed-before': {
        // An earlier delivery auto-fed the pet; it may have died before scheduling the next meal.
        const next = await this.feeding.get(hungryTaskId(petId));
        if (!next || next.payload.meal <= meal) await this.pets.scheduleMealEnd(end.pet);
        return;
      }
      case 'stale':
        this.logger.debug(`${petId}: meal ${meal} ended already (delivery ${ctx.attempt})`);
    }
  }
}
