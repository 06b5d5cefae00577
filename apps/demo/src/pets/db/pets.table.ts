import { boolean, integer, jsonb, pgSchema, text, timestamp } from 'drizzle-orm/pg-core';
import type { Digest } from '../pet.store';

const time = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const count = (name: string) => integer(name).notNull().default(0);

/**
 * The pets table, in the Postgres schema named after the demo's prefix: two demos (or two tests) on one
 * server keep their pets apart the way their prefixes keep their queues apart.
 */
export function petsTable(schema: string) {
  return pgSchema(schema).table('pets', {
    id: text('id').primaryKey(),
    /** Meals started so far; the current (or last) meal's number. */
    meals: integer('meals').notNull(),
    eating: boolean('eating').notNull(),
    fedBy: text('fed_by').$type<'owner' | 'auto-feed'>().notNull(),
    mealStartedAt: time('meal_started_at').notNull(),
    /** When the meal under way ends: the due time of its `hungry:<id>` task. Null while the pet is hungry. */
    hungryAt: time('hungry_at'),
    hungrySince: time('hungry_since'),
    autoFeedCards: count('auto_feed_cards'),
    autoFed: count('auto_fed'),
    accelerated: count('accelerated'),
    /** Activity counted towards the owner's next digest, since the last one was sent. */
    activityFirstAt: time('activity_first_at'),
    activityLastAt: time('activity_last_at'),
    activityFed: count('activity_fed'),
    activityAccelerated: count('activity_accelerated'),
    activityAutoFeedCards: count('activity_auto_feed_cards'),
    activityAutoFed: count('activity_auto_fed'),
    digests: count('digests'),
    lastDigest: jsonb('last_digest').$type<Digest>(),
  });
}

/** The schema's version: the migrations applied so far (PetDatabase). */
export function migrationsTable(schema: string) {
  return pgSchema(schema).table('migrations', { version: integer('version').primaryKey() });
}

export type PetsTable = ReturnType<typeof petsTable>;
export type PetRow = PetsTable['$inferSelect'];
