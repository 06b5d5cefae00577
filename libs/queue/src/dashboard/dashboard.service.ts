import { Injectable, NotFoundException } from '@nestjs/common';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { QueueInputError, UnknownQueueError } from '../errors';
import type { FixedQueue } from '../fixed-queue/fixed-queue';
import type {
  DeadBatch,
  DeadTask,
  DelayQueueStats,
  FixedQueueDelivery,
  FixedQueueStats,
  GroupRateLimitOptions,
  GroupSummary,
  OverdueHandlerDetails,
  PausedGroup,
  QueueKind,
  UpcomingTask,
} from '../interfaces';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { RECURRING_QUEUE_PREFIX } from '../queue.constants';
import { QueueRegistry } from '../queue.registry';
import { RedisConnection } from '../redis/redis-connection';
import { RecurringSchedules } from '../recurring/recurring-schedules';
import type { ReconcilePass, RecurringScheduleInfo } from '../interfaces';
import { QueueProcesses } from '../queue-processes';

/** Paused groups listed on a card (its count of them is among its figures). */
const PAUSED_GROUPS_SHOWN = 50;

/** Messages of a dead batch shown, each cut to PREVIEW_CHARS: enough to recognise a batch, not a copy of its data. */
const PREVIEW_MESSAGES = 3;
const PREVIEW_CHARS = 120;

export interface DashboardLimits {
  hottestGroups: number;
  upcomingTasks: number;
  deadLetters: number;
}

export interface DeadSummary {
  id: string;
  attempts: number;
  diedAt: number;
  lastError?: string;
}

export interface DeadBatchSummary {
  id: string;
  group: string;
  /** Messages the batch holds. */
  size: number;
  attempts: number;
  lastError: string;
  diedAt: number;
  /** Its first messages as JSON, each cut short. */
  preview: string[];
}

/** A `@Recurring` schedule as the dashboard shows it, its times in this process' clock. */
export type ScheduleOverview = Pick<
  RecurringScheduleInfo,
  'name' | 'handled' | 'cron' | 'tz' | 'everyMs' | 'nextRunAt' | 'lastRunAt' | 'lastOutcome' | 'lastSuccessAt'
> & {
  /** Other definitions live processes declare (a rolling deploy or a rollback under way), for people. */
  competing?: string[];
  /** Its own queue (`recurring.<name>`), an internal one: shown in its row, not as a card of its own. */
  queue?: ScheduleQueue;
  /**
   * No run recorded, while a loss of Redis' data (a queue's `dataLostAt`, this time) is not dealt with: a
   * run before it left no trace, so the last run is unknown rather than "never".
   */
  lastRunLostAt?: number;
};

/** What a schedule's row shows of its queue, and names it by for its pause button. */
export interface ScheduleQueue {
  name: string;
  paused: boolean;
  /** Occurrences running now. */
  active: number;
  lagMs: number;
  /** Handlers of this process past their `handlerTimeoutMs`. */
  overdue: number;
}

/** A queue's data loss not yet dealt with, and the last pass of its task source (times in this process' clock). */
export interface RecordOverview {
  dataLostAt?: number;
  lastReconcile?: ReconcilePass;
}

export type QueueOverview = RecordOverview &
  (
    | {
        kind: 'fixed';
        name: string;
        ordered: boolean;
        delivery: FixedQueueDelivery;
        /** Its groupRateLimit, when it has one. */
        groupRateLimit?: GroupRateLimitOptions;
        stats: FixedQueueStats;
        paused: boolean;
        hottest: GroupSummary[];
        /** Always empty at-most-once: only at-least-once batches can die. */
        dead: DeadBatchSummary[];
        /** The next page of dead batches (`deadPage`), null when these are all. */
        deadCursor: string | null;
        /** Some of the paused groups (`stats.pausedGroups` counts them all), each with a resume button. */
        pausedGroups: PausedGroup[];
        overdue: OverdueHandlerDetails[];
      }
    | {
        kind: 'delay';
        name: string;
        paused: boolean;
        stats: DelayQueueStats;
        upcoming: UpcomingTask[];
        dead: DeadSummary[];
        deadCursor: string | null;
        /** Handlers of this process past their `handlerTimeoutMs`, still holding their group or task. */
        overdue: OverdueHandlerDetails[];
      }
  );

type DelayOverview = Extract<QueueOverview, { kind: 'delay' }>;

/** Messages of a group shown when it is clicked. */
const HEAD_MESSAGES = 10;

/**
 * What the dashboard shows: every registered queue, read through the queues' own bounded methods.
 * Times go out in this process's clock (`time` is its now), converted from Redis' with the connection's
 * estimate of the offset, so that the page can say "in 3 s" whatever the two clocks say.
 */
@Injectable()
export class DashboardService {
  constructor(
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    private readonly recurring: RecurringSchedules,
    private readonly consumers: ConsumerRegistry,
    private readonly processes: QueueProcesses,
  ) {}

  async overview(limits: DashboardLimits): Promise<{
    time: number;
    queues: QueueOverview[];
    schedules: ScheduleOverview[];
    processes: { versions: Record<string, number>; dataContract: number };
  }> {
    const local = (serverTime: number) => this.connection.clock.toLocal(serverTime);
    // Awaited together: a read left pending while another's failure is thrown would reject unhandled, and an
    // unhandled rejection ends the process.
    const [queues, listed] = await Promise.all([
      Promise.all(
        this.registry
          .all()
          .map((entry) =>
            entry.kind === 'fixed' ? this.fixedOverview(entry.queue, limits) : this.delayOverview(entry.queue, limits),
          ),
      ),
      this.recurring.list(),
    ]);
    // A schedule's queue is internal: folded into its row. One whose schedule Redis does not list (lost, and
    // not declared again yet) keeps its card meanwhile.
    const folded = new Map<string, DelayOverview>();
    for (const queue of queues)
      if (queue.kind === 'delay' && listed.some(({ name }) => RECURRING_QUEUE_PREFIX + name === queue.name))
        folded.set(queue.name, queue);
    const lostAt = Math.max(...queues.map(({ dataLostAt }) => dataLostAt ?? -Infinity));
    const schedules = listed.map(
      ({
        name,
        handled,
        cron,
        tz,
        everyMs,
        nextRunAt,
        lastRunAt,
        lastOutcome,
        lastSuccessAt,
        declarations,
      }): ScheduleOverview => ({
        name,
        handled,
        ...(cron !== undefined && { cron }),
        ...(tz !== undefined && { tz }),
        ...(everyMs !== undefined && { everyMs }),
        nextRunAt: local(nextRunAt),
        ...(lastRunAt !== undefined && { lastRunAt: local(lastRunAt) }),
        ...(lastOutcome !== undefined && { lastOutcome }),
        ...(lastSuccessAt !== undefined && { lastSuccessAt: local(lastSuccessAt) }),
        ...(lastRunAt === undefined && Number.isFinite(lostAt) && { lastRunLostAt: lostAt }),
        ...scheduleQueue(folded.get(RECURRING_QUEUE_PREFIX + name)),
        ...(declarations.some((each) => each.live && !each.inEffect) && {
          competing: declarations
            .filter((each) => each.live && !each.inEffect)
            .map((each) => {
              const when =
                each.cron !== undefined
                  ? `cron ${each.cron}${each.tz ? ` (${each.tz})` : ''}`
                  : `every ${each.everyMs} ms`;
              return `${when} by ${each.declaredBy}`;
            }),
        }),
      }),
    );
    return {
      time: Date.now(),
      queues: queues.filter(({ name }) => !folded.has(name)).sort((a, b) => a.name.localeCompare(b.name)),
      schedules,
      processes: { versions: this.processes.versions(), dataContract: this.processes.contract },
    };
  }

  private async delayOverview(delay: DelayQueue, limits: DashboardLimits): Promise<QueueOverview> {
    const [stats, upcoming, dead, paused, record] = await Promise.all([
      delay.stats(),
      delay.upcoming(limits.upcomingTasks),
      delay.deadLetters({ limit: limits.deadLetters }),
      delay.isPaused(),
      this.record(delay),
    ]);
    const local = (serverTime: number) => this.connection.clock.toLocal(serverTime);
    return {
      kind: 'delay',
      name: delay.name,
      paused,
      stats,
      upcoming: upcoming.map((task) => ({ ...task, runAt: local(task.runAt) })),
      dead: dead.items.map((task) => summariseTask(task, local)),
      deadCursor: dead.cursor,
      overdue: this.overdue(delay.name),
      ...record,
    };
  }

  private async fixedOverview(fixed: FixedQueue, limits: DashboardLimits): Promise<QueueOverview> {
    const { delivery, ordered, groupRateLimit } = fixed.options;
    const [stats, hottest, dead, paused, pausedGroups, record] = await Promise.all([
      fixed.stats(),
      fixed.hottestGroups(limits.hottestGroups),
      // Nothing to read at-most-once, where a batch leaves Redis as it is claimed.
      delivery === 'at-least-once' ? fixed.deadLetters({ limit: limits.deadLetters }) : { items: [], cursor: null },
      fixed.isPaused(),
      fixed.pausedGroups({ limit: PAUSED_GROUPS_SHOWN }),
      this.record(fixed),
    ]);
    const local = (serverTime: number) => this.connection.clock.toLocal(serverTime);
    return {
      kind: 'fixed',
      name: fixed.name,
      ordered,
      delivery,
      ...(groupRateLimit && { groupRateLimit: { max: groupRateLimit.max, durationMs: groupRateLimit.durationMs } }),
      paused,
      stats,
      hottest: hottest.map((group) => ({ ...group, dueAt: local(group.dueAt) })),
      dead: dead.items.map((batch) => summariseBatch(batch, local)),
      deadCursor: dead.cursor,
      pausedGroups: pausedGroups.items.map((group) => ({ ...group, pausedAt: local(group.pausedAt) })),
      overdue: this.overdue(fixed.name),
      ...record,
    };
  }

  private async record(queue: FixedQueue | DelayQueue): Promise<RecordOverview> {
    const { lostAt, lastPass } = await queue.record.state();
    return {
      ...(lostAt !== undefined && { dataLostAt: this.connection.clock.toLocal(lostAt) }),
      ...(lastPass !== undefined && { lastReconcile: lastPass }),
    };
  }

  private overdue(queue: string): OverdueHandlerDetails[] {
    return this.consumers
      .statuses()
      .filter((status) => status.queue === queue)
      .flatMap(({ consumer, overdue }) => overdue.map((handler) => ({ consumer, ...handler })));
  }

  /** The next page of a queue's dead letters, after `cursor` (from the overview or an earlier page). */
  async deadPage(
    kind: QueueKind,
    queueName: string,
    cursor: string,
    limit: number,
  ): Promise<{ time: number; dead: (DeadSummary | DeadBatchSummary)[]; deadCursor: string | null }> {
    const page = await badInputIs404(async () => {
      if (kind === 'fixed') {
        const fixed = this.find<FixedQueue>('fixed', queueName);
        const dead = await fixed.deadLetters({ cursor, limit });
        return {
          ...dead,
          items: dead.items.map((batch) => summariseBatch(batch, (t) => this.connection.clock.toLocal(t))),
        };
      }
      const delay = this.find<DelayQueue>('delay', queueName);
      const dead = await delay.deadLetters({ cursor, limit });
      return { ...dead, items: dead.items.map((task) => summariseTask(task, (t) => this.connection.clock.toLocal(t))) };
    });
    return { time: Date.now(), dead: page.items, deadCursor: page.cursor };
  }

  /** The oldest messages of a group, each cut short as dead batches' previews are, with their push times. */
  async groupHead(
    queueName: string,
    group: string,
  ): Promise<{ time: number; messages: { pushedAt: number; preview: string }[] }> {
    const fixed = this.find<FixedQueue>('fixed', queueName);
    const head = await badInputIs404(() => fixed.peek(group, HEAD_MESSAGES));
    return {
      time: Date.now(),
      messages: head.map(({ message, pushedAt }) => ({
        pushedAt: this.connection.clock.toLocal(pushedAt),
        preview: cut(message),
      })),
    };
  }

  /** Pauses or resumes a queue for every process (`pause()` / `resume()`). */
  async setPaused(kind: QueueKind, queueName: string, paused: boolean): Promise<{ paused: boolean }> {
    const queue = this.find<FixedQueue | DelayQueue>(kind, queueName);
    await (paused ? queue.pause() : queue.resume());
    return { paused };
  }

  /** Clears a queue's data loss for every process (`acknowledgeDataLoss()`); false when none was recorded. */
  async acknowledgeDataLoss(kind: QueueKind, queueName: string): Promise<{ acknowledged: boolean }> {
    const queue = this.find<FixedQueue | DelayQueue>(kind, queueName);
    return { acknowledged: await queue.acknowledgeDataLoss() };
  }

  /** Resumes a paused group of a FixedQueue, for every process (`resumeGroup`); false when it was not paused. */
  async resumeGroup(queueName: string, group: string): Promise<{ resumed: boolean }> {
    const fixed = this.find<FixedQueue>('fixed', queueName);
    return { resumed: await badInputIs404(() => fixed.resumeGroup(group)) };
  }

  /** Re-queues a DelayQueue's dead task; an id that names none is a 404, as an unknown queue is. */
  async requeue(queueName: string, id: string): Promise<{ requeued: true }> {
    const queue = this.find<DelayQueue>('delay', queueName);
    await found(() => queue.requeue(id), `DelayQueue "${queueName}" has no dead task "${id}"`);
    return { requeued: true };
  }

  /** Re-queues a FixedQueue's dead batch; an id that names none is a 404, as an unknown queue is. */
  async requeueBatch(queueName: string, id: string): Promise<{ requeued: true; dropped: number }> {
    const queue = this.find<FixedQueue>('fixed', queueName);
    const placed = await found(() => queue.requeue(id), `FixedQueue "${queueName}" has no dead batch "${id}"`);
    return { requeued: true, dropped: placed.dropped };
  }

  private find<Q>(kind: QueueKind, name: string): Q {
    try {
      return this.registry.get<Q>(kind, name);
    } catch (error) {
      if (error instanceof UnknownQueueError) throw new NotFoundException(error.message);
      throw error;
    }
  }
}

function scheduleQueue(queue: DelayOverview | undefined): { queue?: ScheduleQueue } {
  if (queue === undefined) return {};
  const { name, paused, stats, overdue } = queue;
  return { queue: { name, paused, active: stats.active, lagMs: stats.lagMs, overdue: overdue.length } };
}

/**
 * What `requeue` placed, or a 404 when it placed nothing (another viewer re-queued it first, say): the
 * page must not report a re-queue that did not happen.
 */
async function found<R>(requeue: () => Promise<R | null>, missing: string): Promise<R> {
  let placed: R | null;
  try {
    placed = await requeue();
  } catch (error) {
    // An id the queue refuses to read (too long, say) cannot name a dead letter either.
    if (!(error instanceof QueueInputError)) throw error;
    placed = null;
  }
  if (placed === null) throw new NotFoundException(missing);
  return placed;
}

/** A message as JSON, cut to PREVIEW_CHARS. */
function cut(message: unknown): string {
  const json = JSON.stringify(message) ?? String(message);
  return json.length > PREVIEW_CHARS ? `${json.slice(0, PREVIEW_CHARS - 1)}…` : json;
}

function summariseBatch(batch: DeadBatch, local: (serverTime: number) => number): DeadBatchSummary {
  const { id, group, messages, attempts, lastError, diedAt } = batch;
  const preview = messages.slice(0, PREVIEW_MESSAGES).map(cut);
  return { id, group, size: messages.length, attempts, lastError, diedAt: local(diedAt), preview };
}

/** Payloads stay out: a dashboard needs to know which task died and why, not its data. */
function summariseTask(task: DeadTask<unknown>, local: (serverTime: number) => number): DeadSummary {
  const { id, attempts, diedAt, lastError } = task;
  return { id, attempts, diedAt: local(diedAt), ...(lastError ? { lastError } : {}) };
}

/** A cursor or group the queue refuses to read names nothing there: a 404, like an unknown queue. */
async function badInputIs404<R>(read: () => Promise<R>): Promise<R> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof QueueInputError) throw new NotFoundException(error.message);
    throw error;
  }
}
