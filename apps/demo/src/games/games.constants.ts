/** Gameplay events, reported continuously. */
export const GAME_EVENTS = 'game-events';
/** Low-priority events (ad views, heartbeats), reported on a schedule as a digest. */
export const GAME_DIGEST = 'game-digest';

/** The reporting rules both queues follow. */
export const REPORTING = {
  /** Events a game holds while it waits to be reported; the oldest go first beyond it. */
  capacity: 1000,
  /** Most events in one report, all of one game. */
  batchSize: 128,
  /** Only events of the last 3 minutes are reported; older ones count as expired. */
  maxAgeMs: 180_000,
} as const;

/**
 * How both queues deliver: a game's batches one at a time, in push order (ordered), each kept in Redis
 * until the upstream took it (at-least-once). A refused batch is delivered again after half a second,
 * then a second; after its third refusal it is dead-lettered (the dashboard can re-queue it) and the
 * game moves on.
 */
export const DELIVERY = {
  ordered: true,
  delivery: 'at-least-once',
  leaseMs: 30_000,
  maxAttempts: 3,
  retryDelayMs: 500,
  deadLetter: { capacity: 1000 },
} as const;

/** One request may carry more events than a game holds: the newest `capacity` of them are kept. */
export const MAX_EVENTS_PER_REQUEST = 2000;
