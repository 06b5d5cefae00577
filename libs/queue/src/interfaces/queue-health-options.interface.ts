import type { QueueKind } from './queue-kind.interface';

export interface QueueHealthOptions {
  /** Names of the queues to check. Default: every registered queue. */
  queues?: string[];
  /** Most messages waiting in a FixedQueue, or due tasks waiting in a DelayQueue, before the check is down. */
  maxBacklog?: number;
  /** Longest the most overdue group or task of a queue may have waited past its due time (Redis time). */
  maxLagMs?: number;
  /** How long Redis has to answer PING, and then the queues' stats, before it counts as down. Default: `HEALTH_DEFAULTS.timeoutMs`. */
  timeoutMs?: number;
}

/** What a queue reported in a health check. */
export interface QueueHealthDetails {
  kind: QueueKind;
  /** Messages held (FixedQueue), or due tasks not yet claimed (DelayQueue). */
  backlog: number;
  lagMs: number;
  /** Consumers of this queue running in this process. */
  consumers: number;
}

/** A terminus indicator result: `{ [key]: { status, ...details } }`. */
export type QueueHealthResult<Key extends string = string> = Record<
  Key,
  {
    status: 'up' | 'down';
    redis: 'up' | 'down';
    queues?: Record<string, QueueHealthDetails>;
    message?: string;
  }
>;
