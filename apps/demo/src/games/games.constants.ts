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

/** One request may carry more events than a game holds: the newest `capacity` of them are kept. */
export const MAX_EVENTS_PER_REQUEST = 2000;
