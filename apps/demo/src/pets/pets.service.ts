import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { DelayQueue, InjectDelayQueue } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { DemoClock } from './demo-clock';
import type { DigestTask, DigestView, MealTask, PetView } from './dto/pet.dto';
import { type Digest, PetStore, type Pet } from './pet.store';
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

  /**
   * Starts a meal; the pet gets hungry when it ends (see FeedingConsumer). The row is committed first, then
   * the task scheduled (see afterCommit).
   */
  async feed(id: string): Promise<PetView> {
    const at = await this.clock.now();
    const pet = await this.store.startMeal(id, at, at + this.clock.real(MEAL_MS));
    if (!pet) throw new ConflictException(`${id} is eating already; feed it when it is hungry`);
    await this.afterCommit(pet, () => this.scheduleMealEnd(pet));
    this.logger.log(`${id} is eating (meal ${pet.meals}), for ${this.clock.format(this.clock.real(MEAL_MS))}`);
    return this.afterActivity(pet, at);
  }

  /**
   * Plays an acceleration card: the current meal ends 2 hours sooner, at once if that is already past. The
   * row's end moves first; the task is then scheduled at the row's time with `onExists: 'earlier'`, not
   * shifted: a repeated or retried call cannot move it twice, and it restores a task that was missing.
   */
  async accelerate(id: string): Promise<PetView> {
    const now = await this.clock.now();
    const pet = await this.store.accelerate(id, this.clock.real(ACCELERATION_MS), now);
    if (!pet) {
      if (!(await this.store.get(id))) throw new NotFoundException(`no pet ${id}: feed it first`);
      throw new ConflictException(`${id} is not eating: there is no meal to accelerate`);
    }
    await this.afterCommit(pet, () => this.scheduleMealEnd(pet, 'earlier'));
    this.logger.log(
      `${id} used an acceleration card: meal ${pet.meals} now ends in ${this.clock.format(pet.hungryAt! - now)}`,
    );
    return this.afterActivity(pet, now);
  }

  /** Gives the pet an auto-feed card: it is fed again, once, when the current meal ends. */
  async holdAutoFeed(id: string): Promise<PetView> {
    const now = await this.clock.now();
    const card = await this.store.armAutoFeed(id, now);
    if (card.outcome === 'missing') throw new NotFoundException(`no pet ${id}: feed it first`);
    if (card.outcome === 'not-eating')
      throw new ConflictException(`${id} is not eating: an auto-feed card works at the end of a meal`);
    if (card.outcome === 'held') throw new ConflictException(`${id} already holds an auto-feed card`);
    this.logger.log(`${id} holds an auto-feed card: it will be fed again when its meal ends`);
    return this.afterActivity(card.pet, now);
  }

  async view(id: string): Promise<PetView> {
    const [pet, digestDueAt, now] = await Promise.all([this.existing(id), this.digestDueAt(id), this.clock.now()]);
    return this.describe(pet, digestDueAt, now);
  }

  private describe(pet: Pet, digestDueAt: number | null, now: number): PetView {
    const { id, hungryAt } = pet;
    return {
      id,
      state: pet.eating ? 'eating' : 'hungry',
      meal: pet.meals,
      fedBy: pet.fedBy,
      mealStartedAt: new Date(pet.mealStartedAt).toISOString(),
      mealEndsAt: hungryAt === null ? null : iso(hungryAt),
      mealEndsIn: hungryAt === null ? null : this.clock.format(hungryAt - now),
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
   * Pushes the owner's digest back, after an activity the pet's row has counted: it goes out once the pet
   * has been quiet for petDigestQuietHours, and no later than petDigestMaxWaitHours after the first activity
   * it sums up, however busy the pet stays (the debounce's maximum wait). The activity itself has happened:
   * a digest that cannot be scheduled is logged, not answered as the request's failure.
   */
  async scheduleDigest(id: string): Promise<number | null> {
    try {
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

  /** The pet as an owner's action at `now` left it, with the time its digest now has. */
  private async afterActivity(pet: Pet, now: number): Promise<PetView> {
    const dueAt = (await this.scheduleDigest(pet.id)) ?? (await this.digestDueAt(pet.id).catch(() => null));
    return this.describe(pet, dueAt, now);
  }

  /**
   * Writes a meal's task after its row was committed, the order of the system this demo comes from: the
   * database is the record, Redis holds the timer. A write that fails leaves the row as it is (the owner's
   * action happened) and the meal to the pet-feeding task source, which lists every meal under way and
   * schedules the missing ones.
   */
  private async afterCommit(pet: Pet, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      this.logger.warn(
        `${pet.id}'s meal ${pet.meals} is in the database but its end could not be scheduled (${(error as Error).message}): ` +
          'the pet-feeding task source restores it',
      );
    }
  }

  /** The task that makes the pet hungry, due when the pet's row says the meal under way ends. */
  scheduleMealEnd(pet: Pet, onExists: 'replace' | 'earlier' = 'replace'): Promise<unknown> {
    return this.feeding.schedule(
      { petId: pet.id, meal: pet.meals },
      { id: hungryTaskId(pet.id), runAt: pet.hungryAt!, onExists },
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
