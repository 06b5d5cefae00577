/** Gameplay events, reported continuously. */
export const GAME_EVENTS = 'game-events';
/** Low-priority events (ad views, heartbeats), reported on a schedule as a digest. */
export const GAME_DIGEST = 'game-digest';

/** The upstream's rules: at most this many events in one report, all of one game... */
export const MAX_EVENTS_PER_REPORT = 128;
/** ...and only events of the last 3 minutes; the queues count older ones as expired. */
export const MAX_EVENT_AGE_MS = 180_000;

/** One request may carry more events than a game holds: the newest `capacity` of them are kept. */
export const MAX_EVENTS_PER_REQUEST = 2000;
