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
 * then a second; after its third refusal the digest dead-letters it (the dashboard can re-queue it) and
 * the game moves on, while the live queue holds the game (LIVE_EXHAUSTED).
 */
export const DELIVERY = {
  ordered: true,
  delivery: 'at-least-once',
  leaseMs: 30_000,
  maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 500 },
  deadLetter: { capacity: 1000 },
} as const;

/**
 * A game whose live batch the upstream refused three times is paused with that batch at its head rather
 * than dead-lettered: its endpoint is likely down, and its next batches would die one after another.
 * HeldGames resumes it later; its events wait meanwhile, in order, within the capacity.
 */
export const LIVE_EXHAUSTED = { onExhausted: 'pause-group' } as const;

/** One request may carry more events than a game holds: the newest `capacity` of them are kept. */
export const MAX_EVENTS_PER_REQUEST = 2000;
