import type { LoggerService, LogLevel } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { startDemo } from '../../apps/demo/src/demo.app';
import type { DemoConfig } from '../../apps/demo/src/demo.config';
import { redisUrl, uniquePrefix } from './testing';

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

/**
 * Starts the demo as the suites do: its pets where DEMO_DATABASE says, on the suite's Redis, a prefix of
 * its own, any free port, no summary or pet story in the log; `overrides` set anything else.
 */
export function startTestDemo(
  overrides: Partial<DemoConfig>,
  logger: LoggerService | LogLevel[] | false,
): Promise<NestExpressApplication> {
  return startDemo(
    {
      ...DEMO_DATABASE,
      redisUrl: redisUrl(),
      prefix: uniquePrefix('demo'),
      port: 0,
      summaryIntervalMs: 0,
      petStory: false,
      ...overrides,
    },
    logger,
  );
}
