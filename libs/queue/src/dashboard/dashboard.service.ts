import { Injectable, NotFoundException } from '@nestjs/common';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { QueueInputError, UnknownQueueError } from '../errors';
import type { FixedQueue } from '../fixed-queue/fixed-queue';
import type {
  DeadBatch,
  DelayQueueStats,
  FixedQueueDelivery,
  FixedQueueStats,
  GroupSummary,
  QueueKind,
  UpcomingTask,
} from '../interfaces';
import { QueueRegistry } from '../queue.registry';

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

export type QueueOverview =
  | {
      kind: 'fixed';
      name: string;
      ordered: boolean;
      delivery: FixedQueueDelivery;
      stats: FixedQueueStats;
      hottest: GroupSummary[];
      /** Always empty at-most-once: only at-least-once batches can die. */
      dead: DeadBatchSummary[];
    }
  | { kind: 'delay'; name: string; stats: DelayQueueStats; upcoming: UpcomingTask[]; dead: DeadSummary[] };

/**
 * What the dashboard shows: every registered queue, read through the queues' own bounded methods.
 * Times go out in this process's clock (`time` is its now), converted from Redis' with each queue's
 * estimate of the offset, so that the page can say "in 3 s" whatever the two clocks say.
 */
@Injectable()
export class DashboardService {
  constructor(private readonly registry: QueueRegistry) {}

  async overview(limits: DashboardLimits): Promise<{ time: number; queues: QueueOverview[] }> {
    const queues = await Promise.all(
      this.registry.all().map(async (entry): Promise<QueueOverview> => {
        const { name } = entry;
        if (entry.kind === 'fixed') return this.fixedOverview(entry.queue, limits);
        const delay = entry.queue;
        const [stats, upcoming, dead] = await Promise.all([
          delay.stats(),
          delay.upcoming(limits.upcomingTasks),
          delay.deadLetters(limits.deadLetters),
        ]);
        // Payloads stay out: a dashboard needs to know which task died and why, not its data.
        const local = (serverTime: number) => delay.clock.toLocal(serverTime);
        const summaries = dead.map(({ id, attempts, diedAt, lastError }) => ({
          id,
          attempts,
          diedAt: local(diedAt),
          ...(lastError ? { lastError } : {}),
        }));
        return {
          kind: 'delay',
          name,
          stats,
          upcoming: upcoming.map((task) => ({ ...task, runAt: local(task.runAt) })),
          dead: summaries,
        };
      }),
    );
    return { time: Date.now(), queues: queues.sort((a, b) => a.name.localeCompare(b.name)) };
  }

  private async fixedOverview(fixed: FixedQueue, limits: DashboardLimits): Promise<QueueOverview> {
    const { delivery, ordered } = fixed.options;
    const [stats, hottest, dead] = await Promise.all([
      fixed.stats(),
      fixed.hottestGroups(limits.hottestGroups),
      // Nothing to read at-most-once, where a batch leaves Redis as it is claimed.
      delivery === 'at-least-once' ? fixed.deadLetters(limits.deadLetters) : [],
    ]);
    const local = (serverTime: number) => fixed.clock.toLocal(serverTime);
    return {
      kind: 'fixed',
      name: fixed.name,
      ordered,
      delivery,
      stats,
      hottest: hottest.map((group) => ({ ...group, dueAt: local(group.dueAt) })),
      dead: dead.map((batch) => summariseBatch(batch, local)),
    };
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

function summariseBatch(batch: DeadBatch, local: (serverTime: number) => number): DeadBatchSummary {
  const { id, group, messages, attempts, lastError, diedAt } = batch;
  const preview = messages.slice(0, PREVIEW_MESSAGES).map((message) => {
    const json = JSON.stringify(message);
    return json.length > PREVIEW_CHARS ? `${json.slice(0, PREVIEW_CHARS - 1)}…` : json;
  });
  return { id, group, size: messages.length, attempts, lastError, diedAt: local(diedAt), preview };
}
