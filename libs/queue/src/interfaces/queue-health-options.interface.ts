import type { QueueKind } from './queue-kind.interface';
import type { ReconcilePass } from './task-source.interface';

/** Limits a queue is held to in a health check. */
export interface QueueHealthLimits {
  /** Most messages waiting in a FixedQueue, or due tasks waiting in a DelayQueue, before the check is down. */
  maxBacklog?: number;
  /**
   * Longest the most overdue group or task of a queue may have waited past its due time (Redis time).
   * A queue drained only by scheduled consumers (`cron` / `intervalMs`) waits up to one period between
   * drains by design: it is allowed this much more than its period (the longest gap between two runs).
   */
  maxLagMs?: number;
  /**
   * What a data loss not yet dealt with does to the check once the queue's record is written again:
   * `'warn'` (default) keeps it up and reports the loss (`dataLostAt`, `warning`), `'fail'` keeps it down
   * until a pass of its task source or `acknowledgeDataLoss()`. While a record this process had seen is
   * missing in Redis, the check is down either way. Default: `QUEUE_DEFAULTS.health.dataLoss`.
   */
  dataLoss?: 'warn' | 'fail';
}

export interface QueueHealthOptions extends QueueHealthLimits {
  /**
   * Names of the queues to check (default: every registered queue), or limits per queue:
   * `{ 'game-digest': { maxLagMs: 120_000 } }` checks every queue, the named ones against their own
   * limits (a limit left out there is the top-level one) instead of the top-level ones.
   */
  queues?: string[] | Record<string, QueueHealthLimits>;
  /** How long Redis has to answer PING, and then the queues' stats, before it counts as down. Default: `QUEUE_DEFAULTS.health.timeoutMs`. */
  timeoutMs?: number;
  /**
   * A `@Recurring` schedule this process declares is down when its pending tick is late by more than
   * two of its periods plus this. Default: `QUEUE_DEFAULTS.health.recurringGraceMs`.
   */
  recurringGraceMs?: number;
}

/** What a queue reported in a health check. */
export interface QueueHealthDetails {
  kind: QueueKind;
  /** Messages held (FixedQueue), or due tasks not yet claimed (DelayQueue). */
  backlog: number;
  lagMs: number;
  /** Consumers of this queue running in this process. */
  consumers: number;
  /** When every consumer of this queue here runs on a schedule: the longest gap between two of its drains. */
  drainedEveryMs?: number;
  /**
   * Handlers of this queue's consumers here that ran past `handlerTimeoutMs` since start-up (absent
   * while none did).
   */
  timedOutHandlers?: number;
  /**
   * Handlers of this queue's consumers here past `handlerTimeoutMs` and still running, longest overdue
   * first (absent while none is): each still holds its group or task, which no one else gets until it
   * settles. Their consumer stops claiming once they outnumber its concurrency, which makes the check down.
   */
  overdueHandlers?: OverdueHandlerDetails[];
  /** Paused (`pause()`): its backlog and lag grow by design, so their limits are not applied. */
  paused?: true;
  /** FixedQueue: groups paused (`pauseGroup`), absent while none is. Their messages count in the backlog. */
  pausedGroups?: number;
  /**
   * When a process found the queue's record gone after it had seen it (its data was lost), epoch ms:
   * the queue is reported until a pass of its task source or `acknowledgeDataLoss()` (the check stays
   * up unless `dataLoss: 'fail'`). Absent otherwise.
   */
  dataLostAt?: number;
  /**
   * DelayQueue: since when (Redis time, epoch ms) a pass of its `@TaskSource` is owed (its record was
   * created, or a write gave up) while a live process has the source: the check is down until a pass
   * that began after that ends. Absent otherwise (no pass owed, or no live process with a source).
   */
  passOwedAt?: number;
  /** DelayQueue whose data loss is reported: whether a live process has its `@TaskSource` to rebuild it. */
  taskSourceLive?: boolean;
  /** DelayQueue: the last pass of its `@TaskSource`, by any process. Absent before the first. */
  lastReconcile?: ReconcilePass;
}

/** A `@Recurring` schedule in a health result. */
export interface RecurringHealthDetails {
  /** Whether this process runs it: false for one whose `@Recurring` is gone from this code. */
  handled: boolean;
  /** Absent when the schedule is `missing`. */
  nextRunAt?: number;
  lastOutcome?: 'completed' | 'failed';
  lastSuccessAt?: number;
  /** Declared by this process but not in Redis (its data was lost): declared again within seconds. The check is down. */
  missing?: true;
  /** How late its pending tick is, when more than two periods plus `recurringGraceMs`: nothing ran it. The check is down. */
  overdueMs?: number;
  /** Live processes declare different definitions of it (see `RecurringSchedules.list()`). */
  conflict?: true;
}

/**
 * The connection wake-up hints arrive on, in a health result. `connected`: it answers its PINGs;
 * `reconnecting`: ioredis is connecting it again; `stalled`: a PING went unanswered past its deadline
 * and none has been answered since (it is dropped and reconnected meanwhile, and consumers poll every
 * shard at each attempt, so work is found without hints, only later).
 */
export interface SubscriberHealthDetails {
  state: 'connected' | 'reconnecting' | 'stalled';
  /** Time since the connection last answered (a PING's reply or a hint); absent before its first. */
  lastReplyAgeMs?: number;
  /** Times it was dropped and connected again for not answering in time, since start-up. */
  restarts: number;
}

/** A terminus indicator result: `{ [key]: { status, ...details } }`. */
export type QueueHealthResult<Key extends string = string> = Record<
  Key,
  {
    status: 'up' | 'down';
    redis: 'up' | 'down';
    /** Redis' `maxmemory-policy` (of every master, when they differ): anything but `noeviction` can lose queued work. */
    evictionPolicy?: string;
    /**
     * What deserves a look without making the check down: a policy that evicts (or could not be read)
     * while `evictionPolicy: 'warn'` lets the application run, and data losses not yet dealt with
     * (`dataLoss: 'warn'`), joined with `; `.
     */
    warning?: string;
    queues?: Record<string, QueueHealthDetails>;
    /** The `@Recurring` schedules of the application, when there are some. */
    recurring?: Record<string, RecurringHealthDetails>;
    /** The wake-up hints' connection, once a consumer of this process listens for them. */
    subscriber?: SubscriberHealthDetails;
    /** The processes live under the prefix by library version, and the data contract this one keeps to (Upgrading, in the README). */
    processes?: { versions: Record<string, number>; dataContract: number };
    message?: string;
  }
>;

/** A handler past its `handlerTimeoutMs`, still running, as health reports it. */
export type OverdueHandlerDetails = ({ group: string } | { id: string }) & {
  /** `Class.method` of its consumer. */
  consumer: string;
  runningMs: number;
  overdueMs: number;
};
