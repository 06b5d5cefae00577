import { Injectable } from '@nestjs/common';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { PetDatabase } from './db/pet-database';
import type { PetRow } from './db/pets.table';

export interface Pet {
  id: string;
  /** Meals started so far; the current (or last) meal's number. */
  meals: number;
  eating: boolean;
  mealStartedAt: number;
  /** When the meal under way ends (the due time of its task), null while hungry. */
  hungryAt: number | null;
  fedBy: 'owner' | 'auto-feed';
  hungrySince: number | null;
  autoFeedCards: number;
  autoFed: number;
  accelerated: number;
  /** Activity digests sent so far, and the last of them. */
  digests: number;
  lastDigest: Digest | null;
}

/** What an activity digest sums up (times in ms). */
export interface Digest {
  fed: number;
  accelerated: number;
  autoFeedCards: number;
  autoFed: number;
  firstAt: number;
  lastAt: number;
  dueAt: number;
  sentAt: number;
}

/** What the digest counts: an owner's feeding, a card played or taken, a feeding by the auto-feed card. */
export type Activity = 'fed' | 'accelerated' | 'autoFeedCards' | 'autoFed';

export type MealEnd =
  /** The meal that began at `startedAt` ended at `at`, and the pet is hungry. */
  | { outcome: 'hungry'; at: number; startedAt: number }
  /** The meal ended, an auto-feed card was used, and the next meal began: the pet as it now is. */
  | { outcome: 'auto-fed'; pet: Pet }
  /** A repeated delivery of a meal that already auto-fed the pet: the pet as that left it. */
  | { outcome: 'auto-fed-before'; pet: Pet }
  /** A delivery for a meal that is over: nothing to do. */
  | { outcome: 'stale' };

export type CardOutcome =
  { outcome: 'ok'; pet: Pet } | { outcome: 'missing' } | { outcome: 'not-eating' } | { outcome: 'held' };

/** A meal under way, as the pet-feeding task source lists it. */
export interface MealUnderWay {
  id: string;
  meal: number;
  hungryAt: number;
}

const ACTIVITY_COLUMN = {
  fed: 'activityFed',
  accelerated: 'activityAccelerated',
  autoFeedCards: 'activityAutoFeedCards',
  autoFed: 'activityAutoFed',
} as const;

/**
 * Pets' state: one row per pet in PostgreSQL, the record the pet-feeding queue is rebuilt from. Each
 * change is one statement or one transaction that also counts the activity towards the owner's digest, so
 * a handler that runs twice, or races a request, never half-applies a change; the queue is written after
 * it commits (PetsService).
 */
@Injectable()
export class PetStore {
  constructor(private readonly database: PetDatabase) {}

  private get db() {
    return this.database.db;
  }

  private get pets() {
    return this.database.pets;
  }

  async get(id: string): Promise<Pet | null> {
    const [row] = await this.db.select().from(this.pets).where(eq(this.pets.id, id));
    return row ? toPet(row) : null;
  }

  /** Starts the next meal at `at`, ending at `hungryAt`; null when the pet is eating already. */
  async startMeal(id: string, at: number, hungryAt: number): Promise<Pet | null> {
    const { pets } = this;
    const [row] = await this.db
      .insert(pets)
      .values({
        id,
        meals: 1,
        eating: true,
        fedBy: 'owner',
        mealStartedAt: new Date(at),
        hungryAt: new Date(hungryAt),
        activityFirstAt: new Date(at),
        activityLastAt: new Date(at),
        activityFed: 1,
      })
      .onConflictDoUpdate({
        target: pets.id,
        set: {
          meals: sql`${pets.meals} + 1`,
          eating: true,
          fedBy: 'owner',
          mealStartedAt: new Date(at),
          hungryAt: new Date(hungryAt),
          hungrySince: null,
          ...this.activity('fed', at),
        },
        where: eq(pets.eating, false),
      })
      .returning();
    return row ? toPet(row) : null;
  }

  /** Moves the end of the meal under way `byMs` earlier; null when there is none. */
  async accelerate(id: string, byMs: number, at: number): Promise<Pet | null> {
    const { pets } = this;
    const [row] = await this.db
      .update(pets)
      .set({
        hungryAt: sql`${pets.hungryAt} - make_interval(secs => ${byMs / 1000})`,
        accelerated: sql`${pets.accelerated} + 1`,
        ...this.activity('accelerated', at),
      })
      .where(and(eq(pets.id, id), eq(pets.eating, true)))
      .returning();
    return row ? toPet(row) : null;
  }

  /** A pet holds at most one auto-feed card, and only for a meal under way. */
  async armAutoFeed(id: string, at: number): Promise<CardOutcome> {
    const { pets } = this;
    const [row] = await this.db
      .update(pets)
      .set({ autoFeedCards: 1, ...this.activity('autoFeedCards', at) })
      .where(and(eq(pets.id, id), eq(pets.eating, true), eq(pets.autoFeedCards, 0)))
      .returning();
    if (row) return { outcome: 'ok', pet: toPet(row) };
    const pet = await this.get(id);
    if (!pet) return { outcome: 'missing' };
    return pet.eating ? { outcome: 'held' } : { outcome: 'not-eating' };
  }

  /** Ends meal `meal` at `at` (see MealEnd); an auto-feed card starts the next one, `mealMs` long. */
  finishMeal(id: string, meal: number, at: number, mealMs: number): Promise<MealEnd> {
    const { pets } = this;
    return this.db.transaction(async (tx): Promise<MealEnd> => {
      const [row] = await tx.select().from(pets).where(eq(pets.id, id)).for('update');
      if (!row || !row.eating) return { outcome: 'stale' };
      if (row.meals === meal + 1 && row.fedBy === 'auto-feed') return { outcome: 'auto-fed-before', pet: toPet(row) };
      if (row.meals !== meal) return { outcome: 'stale' };
      if (row.autoFeedCards > 0) {
        const [next] = await tx
          .update(pets)
          .set({
            meals: meal + 1,
            fedBy: 'auto-feed',
            mealStartedAt: new Date(at),
            hungryAt: new Date(at + mealMs),
            autoFeedCards: sql`${pets.autoFeedCards} - 1`,
            autoFed: sql`${pets.autoFed} + 1`,
            ...this.activity('autoFed', at),
          })
          .where(eq(pets.id, id))
          .returning();
        return { outcome: 'auto-fed', pet: toPet(next) };
      }
      await tx
        .update(pets)
        .set({ eating: false, hungryAt: null, hungrySince: new Date(at) })
        .where(eq(pets.id, id));
      return { outcome: 'hungry', at, startedAt: row.mealStartedAt.getTime() };
    });
  }

  /**
   * Turns the activity counted so far into the pet's last digest (due at `dueAt`, sent at `at`) and starts
   * counting afresh; null when there is none (a repeated delivery of a digest already sent).
   */
  takeDigest(id: string, dueAt: number, at: number): Promise<Digest | null> {
    const { pets } = this;
    return this.db.transaction(async (tx) => {
      const [row] = await tx.select().from(pets).where(eq(pets.id, id)).for('update');
      if (!row?.activityFirstAt || !row.activityLastAt) return null;
      const digest: Digest = {
        fed: row.activityFed,
        accelerated: row.activityAccelerated,
        autoFeedCards: row.activityAutoFeedCards,
        autoFed: row.activityAutoFed,
        firstAt: row.activityFirstAt.getTime(),
        lastAt: row.activityLastAt.getTime(),
        dueAt,
        sentAt: at,
      };
      await tx
        .update(pets)
        .set({
          activityFirstAt: null,
          activityLastAt: null,
          activityFed: 0,
          activityAccelerated: 0,
          activityAutoFeedCards: 0,
          activityAutoFed: 0,
          lastDigest: digest,
          digests: sql`${pets.digests} + 1`,
        })
        .where(eq(pets.id, id));
      return digest;
    });
  }

  /**
   * Every meal under way, by pet id, `pageSize` rows a query (keyset pages: each resumes after the last id
   * the previous one returned, so memory stays bounded and rows changed meanwhile are neither skipped nor
   * read twice).
   */
  async *mealsUnderWay(pageSize = 500): AsyncGenerator<MealUnderWay> {
    const { pets } = this;
    for (let after = ''; ;) {
      const page = await this.db
        .select({ id: pets.id, meal: pets.meals, hungryAt: pets.hungryAt })
        .from(pets)
        .where(and(eq(pets.eating, true), gt(pets.id, after)))
        .orderBy(asc(pets.id))
        .limit(pageSize);
      for (const { id, meal, hungryAt } of page) if (hungryAt) yield { id, meal, hungryAt: hungryAt.getTime() };
      if (page.length < pageSize) return;
      after = page[page.length - 1].id;
    }
  }

  async remove(id: string): Promise<void> {
    await this.db.delete(this.pets).where(eq(this.pets.id, id));
  }

  /** The columns that count activity `what` at `at` towards the next digest. */
  private activity(what: Activity, at: number) {
    const { pets } = this;
    const column = ACTIVITY_COLUMN[what];
    return {
      activityFirstAt: sql`coalesce(${pets.activityFirstAt}, ${new Date(at).toISOString()}::timestamptz)`,
      activityLastAt: new Date(at),
      [column]: sql`${pets[column]} + 1`,
    };
  }
}

function toPet(row: PetRow): Pet {
  return {
    id: row.id,
    meals: row.meals,
    eating: row.eating,
    mealStartedAt: row.mealStartedAt.getTime(),
    hungryAt: row.hungryAt?.getTime() ?? null,
    fedBy: row.fedBy,
    hungrySince: row.hungrySince?.getTime() ?? null,
    autoFeedCards: row.autoFeedCards,
    autoFed: row.autoFed,
    accelerated: row.accelerated,
    digests: row.digests,
    lastDigest: row.lastDigest,
  };
}
