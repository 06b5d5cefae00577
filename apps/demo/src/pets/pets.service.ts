import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { DelayQueue, InjectDelayQueue, TaskStateError } from 'nestjs-redis-queues';
import { DemoClock } from './demo-clock';
import type { MealTask, PetView } from './dto/pet.dto';
import { PetStore, type Pet } from './pet.store';
import { ACCELERATION_MS, hungryTaskId, MEAL_MS, PET_FEEDING } from './pets.constants';

@Injectable()
export class PetsService {
  private readonly logger = new Logger('Pets');

  constructor(
    @InjectDelayQueue(PET_FEEDING) private readonly feeding: DelayQueue<MealTask>,
    private readonly store: PetStore,
    private readonly clock: DemoClock,
  ) {}

  /** Starts a meal; the pet gets hungry when it ends (see FeedingConsumer). */
  async feed(id: string): Promise<PetView> {
    const started = await this.store.startMeal(id);
    if (!started) throw new ConflictException(`${id} is eating already; feed it when it is hungry`);
    try {
      await this.scheduleMealEnd(id, started.meal, started.startedAt);
    } catch (error) {
      await this.store.abortMeal(id, started.meal);
      throw error;
    }
    this.logger.log(`${id} is eating (meal ${started.meal}), for ${this.clock.format(this.clock.real(MEAL_MS))}`);
    return this.view(id);
  }

  /** Plays an acceleration card: the current meal ends 2 hours sooner, at once if that is already past. */
  async accelerate(id: string): Promise<PetView> {
    const pet = await this.existing(id);
    if (!pet.eating) throw new ConflictException(`${id} is not eating: there is no meal to accelerate`);
    const moved = await this.feeding
      .shift(hungryTaskId(id), -this.clock.real(ACCELERATION_MS))
      .catch((error: unknown) => {
        throw error instanceof TaskStateError ? new ConflictException(`${id}'s meal is ending right now`) : error;
      });
    if (!moved) throw new ConflictException(`${id}'s meal has just ended`);
    await this.store.countAcceleration(id);
    this.logger.log(
      `${id} used an acceleration card: meal ${pet.meals} now ends in ${this.clock.format(moved.runAt - Date.now())}`,
    );
    return this.view(id);
  }

  /** Gives the pet an auto-feed card: it is fed again, once, when the current meal ends. */
  async holdAutoFeed(id: string): Promise<PetView> {
    const outcome = await this.store.armAutoFeed(id);
    if (outcome === 'missing') throw new NotFoundException(`no pet ${id}: feed it first`);
    if (outcome === 'not-eating')
      throw new ConflictException(`${id} is not eating: an auto-feed card works at the end of a meal`);
    if (outcome === 'held') throw new ConflictException(`${id} already holds an auto-feed card`);
    this.logger.log(`${id} holds an auto-feed card: it will be fed again when its meal ends`);
    return this.view(id);
  }

  async view(id: string): Promise<PetView> {
    const pet = await this.existing(id);
    const task = pet.eating ? await this.feeding.get(hungryTaskId(id)) : null;
    return {
      id,
      state: pet.eating ? 'eating' : 'hungry',
      meal: pet.meals,
      fedBy: pet.fedBy,
      mealStartedAt: new Date(pet.mealStartedAt).toISOString(),
      mealEndsAt: task ? new Date(task.runAt).toISOString() : null,
      mealEndsIn: task ? this.clock.format(task.runAt - Date.now()) : null,
      hungrySince: !pet.eating && pet.hungrySince !== null ? new Date(pet.hungrySince).toISOString() : null,
      cards: { autoFeed: pet.autoFeedCards },
      history: { meals: pet.meals, autoFed: pet.autoFed, accelerated: pet.accelerated },
    };
  }

  /** The task that makes the pet hungry: due one meal after `startedAt` (Redis time). */
  scheduleMealEnd(id: string, meal: number, startedAt: number): Promise<unknown> {
    return this.feeding.schedule(
      { petId: id, meal },
      { id: hungryTaskId(id), runAt: startedAt + this.clock.real(MEAL_MS) },
    );
  }

  private async existing(id: string): Promise<Pet> {
    const pet = await this.store.get(id);
    if (!pet) throw new NotFoundException(`no pet ${id}: feed it first`);
    return pet;
  }
}
