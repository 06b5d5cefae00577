import { PGlite } from '@electric-sql/pglite';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { max, sql, type SQL } from 'drizzle-orm';
import { drizzle as onPostgres } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as onPglite } from 'drizzle-orm/pglite';
import { Pool } from 'pg';
import type { DemoConfig } from '../../demo.config';
import { freshPglite } from './pglite-template';
import { migrationsTable, petsTable, type PetsTable } from './pets.table';

export type PetDb = PgDatabase<PgQueryResultHKT>;

/**
 * The schema, one step a version (its statements, one a query), applied at start-up in order. A step is never
 * edited once released: a change is a new step.
 */
const MIGRATIONS: ((schema: SQL) => SQL[])[] = [
  (schema) => [
    sql`
    CREATE TABLE ${schema}.pets (
      id text PRIMARY KEY,
      meals integer NOT NULL,
      eating boolean NOT NULL,
      fed_by text NOT NULL,
      meal_started_at timestamptz NOT NULL,
      hungry_at timestamptz,
      hungry_since timestamptz,
      auto_feed_cards integer NOT NULL DEFAULT 0,
      auto_fed integer NOT NULL DEFAULT 0,
      accelerated integer NOT NULL DEFAULT 0,
      activity_first_at timestamptz,
      activity_last_at timestamptz,
      activity_fed integer NOT NULL DEFAULT 0,
      activity_accelerated integer NOT NULL DEFAULT 0,
      activity_auto_feed_cards integer NOT NULL DEFAULT 0,
      activity_auto_fed integer NOT NULL DEFAULT 0,
      digests integer NOT NULL DEFAULT 0,
      last_digest jsonb,
      CHECK (eating = (hungry_at IS NOT NULL))
    )`,
    // The task source's keyset pages: the pets that are eating, by id.
    sql`CREATE INDEX pets_eating ON ${schema}.pets (id) WHERE eating`,
  ],
];

// Any constant both demos agree on: it only makes start-ups on one server take turns.
const MIGRATION_LOCK = 0x6e7271;

/**
 * The demo's PostgreSQL: a server when `databaseUrl` is set, else PGlite, Postgres compiled to WebAssembly,
 * in this process (nothing to install). Drizzle serves both with one query API: its node-postgres and
 * PGlite drivers are first-party, so the store is written once.
 */
export class PetDatabase implements OnApplicationShutdown {
  private static readonly logger = new Logger('PetDatabase');

  private constructor(
    readonly db: PetDb,
    readonly pets: PetsTable,
    /** Where the pets are, for people: `PGlite (in memory)` or the server's address without credentials. */
    readonly description: string,
    private readonly close: () => Promise<void>,
  ) {}

  static async open(config: DemoConfig): Promise<PetDatabase> {
    const pets = petsTable(config.prefix);
    if (config.databaseUrl) {
      const pool = new Pool({ connectionString: config.databaseUrl, max: 8 });
      pool.on('error', (error) => PetDatabase.logger.warn(`PostgreSQL: ${error.message}`));
      const database = new PetDatabase(onPostgres({ client: pool }), pets, serverName(config.databaseUrl), () =>
        pool.end(),
      );
      await database.migrate(config.prefix).catch(async (error: Error) => {
        await pool.end();
        throw new Error(`PostgreSQL at ${database.description}: ${error.message}`);
      });
      return database;
    }
    const client: PGlite = await freshPglite();
    const database = new PetDatabase(onPglite({ client }), pets, 'PGlite (in memory)', () => client.close());
    await database.migrate(config.prefix);
    return database;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** Brings the schema up to date; start-ups against one server take turns (a transaction-scoped lock). */
  private async migrate(schemaName: string): Promise<void> {
    const schema = sql`${sql.identifier(schemaName)}`;
    const migrations = migrationsTable(schemaName);
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
      await tx.execute(sql`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await tx.execute(sql`CREATE TABLE IF NOT EXISTS ${schema}.migrations (version integer PRIMARY KEY)`);
      const [{ applied }] = await tx.select({ applied: max(migrations.version) }).from(migrations);
      for (let version = (applied ?? 0) + 1; version <= MIGRATIONS.length; version++) {
        for (const statement of MIGRATIONS[version - 1](schema)) await tx.execute(statement);
        await tx.insert(migrations).values({ version });
      }
    });
  }
}

function serverName(url: string): string {
  const { host, pathname } = new URL(url);
  return `${host}${pathname}`;
}
