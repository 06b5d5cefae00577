import { Injectable, NotFoundException } from '@nestjs/common';
import type { DelayQueue } from '../delay-queue/delay-queue';
import { UnknownQueueError } from '../errors';
import type { DelayQueueStats, FixedQueueStats, GroupSummary, UpcomingTask } from '../interfaces';
import { QueueRegistry } from '../queue.registry';

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

export type QueueOverview =
  | { kind: 'fixed'; name: string; stats: FixedQueueStats; hottest: GroupSummary[] }
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
        if (entry.kind === 'fixed') {
          const fixed = entry.queue;
          const [stats, hottest] = await Promise.all([fixed.stats(), fixed.hottestGroups(limits.hottestGroups)]);
          return {
            kind: 'fixed',
            name,
            stats,
            hottest: hottest.map((group) => ({ ...group, dueAt: fixed.clock.toLocal(group.dueAt) })),
          };
        }
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

  async requeue(queueName: string, id: string): Promise<{ requeued: boolean }> {
    let queue: DelayQueue;
    try {
      queue = this.registry.get<DelayQueue>('delay', queueName);
    } catch (error) {
      if (error instanceof UnknownQueueError) throw new NotFoundException(error.message);
      throw error;
    }
    return { requeued: (await queue.requeue(id)) !== null };
  }
}
