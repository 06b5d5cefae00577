import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { DelayQueue, InjectDelayQueue, TaskStateError } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { DemoClock } from './demo-clock';
import type { DigestTask, DigestView, MealTask, PetView } from './dto/pet.dto';
import { type Activity, type Digest, PetStore, type Pet } from './pet.store';
import {
  ACCELERATION_MS,
  digestTaskId,
  HOUR_MS,
  hungryTaskId,
  MEAL_MS,
  PET_DIGESTS,
  PET_FEEDING,
} from './pets.constants';

@Injectable()
export class PetsService {
  private readonly logger = new Logger('Pets');

  constructor(
    @InjectDelayQueue(PET_FEEDING) private readonly feeding: DelayQueue<MealTask>,
    @InjectDelayQueue(PET_DIGESTS) private readonly digests: DelayQueue<DigestTask>,
    private readonly store: PetStore,
    private readonly clock: DemoClock,
    private readonly config: DemoConfig,
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
    return this.afterActivity(id, 'fed');
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
    return this.afterActivity(id, 'accelerated');
  }

  /** Gives the pet an auto-feed card: it is fed again, once, when the current meal ends. */
  async holdAutoFeed(id: string): Promise<PetView> {
    const outcome = await this.store.armAutoFeed(id);
    if (outcome === 'missing') throw new NotFoundException(`no pet ${id}: feed it first`);
    if (outcome === 'not-eating')
      throw new ConflictException(`${id} is not eating: an auto-feed card works at the end of a meal`);
    if (outcome === 'held') throw new ConflictException(`${id} already holds an auto-feed card`);
    this.logger.log(`${id} holds an auto-feed card: it will be fed again when its meal ends`);
    return this.afterActivity(id, 'autoFeedCards');
  }

  async view(id: string): Promise<PetView> {
    const [pet, digestDueAt] = await Promise.all([this.existing(id), this.digestDueAt(id)]);
    return this.describe(pet, digestDueAt);
  }

  private async describe(pet: Pet, digestDueAt: number | null): Promise<PetView> {
    const { id } = pet;
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
      digest: {
        dueAt: digestDueAt === null ? null : iso(digestDueAt),
        sent: pet.digests,
        last: pet.lastDigest && digestView(pet.lastDigest),
      },
    };
  }

  /** When the pet's digest goes out; null while none waits (a digest being sent has nothing left to wait for). */
  private async digestDueAt(id: string): Promise<number | null> {
    const digest = await this.digests.get(digestTaskId(id));
    return digest?.state === 'scheduled' ? digest.runAt : null;
  }

  /**
   * Counts an activity towards the pet's next digest and pushes that digest back: it goes out once the
   * pet has been quiet for petDigestQuietHours, and no later than petDigestMaxWaitHours after the first
   * activity it sums up, however busy the pet stays (the debounce's maximum wait). The activity itself
   * has happened: a digest that cannot be scheduled is logged, not answered as the request's failure.
   */
  async noteActivity(id: string, activity: Activity): Promise<number | null> {
    try {
      await this.store.noteActivity(id, activity);
      const { runAt } = await this.digests.schedule(
        { petId: id },
        {
          id: digestTaskId(id),
          delayMs: this.clock.real(this.config.petDigestQuietHours * HOUR_MS),
          debounce: { maxWaitMs: this.clock.real(this.config.petDigestMaxWaitHours * HOUR_MS) },
        },
      );
      return runAt;
    } catch (error) {
      this.logger.warn(`${id}'s activity digest could not be scheduled: ${(error as Error).message}`);
      return null;
    }
  }

  /**
   * The pet as an owner's action left it, with the time its digest now has (read only when scheduling
   * it failed). Described first: a card that moved the meal's end into the past has the meal end at
   * once, and the answer should still show it.
   */
  private async afterActivity(id: string, activity: Activity): Promise<PetView> {
    const pet = await this.existing(id);
    const meal = await this.describe(pet, null);
    const dueAt = (await this.noteActivity(id, activity)) ?? (await this.digestDueAt(id));
    return { ...meal, digest: { ...meal.digest, dueAt: dueAt === null ? null : iso(dueAt) } };
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

const iso = (ms: number) => new Date(ms).toISOString();

function digestView(digest: Digest): DigestView {
  const { fed, accelerated, autoFeedCards, autoFed } = digest;
  return {
    fed,
    accelerated,
    autoFeedCards,
    autoFed,
    firstAt: iso(digest.firstAt),
    lastAt: iso(digest.lastAt),
    dueAt: iso(digest.dueAt),
    sentAt: iso(digest.sentAt),
  };
}
