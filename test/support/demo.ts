import type { DemoConfig } from '../../apps/demo/src/demo.config';

/** Every queue the demo registers, in name order: its dashboard's cards and its health's queues. */
export const DEMO_QUEUES = [
  'game-digest',
  'game-events',
  'pet-digests',
  'pet-feeding',
  'recurring.games.backlog-audit',
  // The pet-feeding queue's periodic task source pass (its reconcile option) is a recurring schedule.
  'recurring.reconcile.pet-feeding',
  'vet-checks',
];

/**
 * Where the demo keeps its pets in a test: PGlite in the process, or the PostgreSQL server that
 * DATABASE_URL names (`npm run test:postgres` sets it).
 */
export const DEMO_DATABASE: Partial<DemoConfig> = process.env.DATABASE_URL
  ? { databaseUrl: process.env.DATABASE_URL }
  : {};
