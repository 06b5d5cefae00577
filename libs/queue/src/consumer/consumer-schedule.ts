import type { ModuleRef } from '@nestjs/core';
import { loadOptional } from '../optional-dependency';
import { badCron, missingScheduler } from '../queue.messages';
import { describeError } from '../utils/errors';

/** The part of @nestjs/schedule's SchedulerRegistry this uses. */
interface Scheduler {
  addInterval(name: string, interval: NodeJS.Timeout): void;
  deleteInterval(name: string): void;
  addCronJob(name: string, job: CronJob): void;
  deleteCronJob(name: string): void;
}

interface CronJob {
  start(): void;
  stop(): void;
  nextDates(count: number): { toMillis(): number }[];
}

type ScheduleModule = { SchedulerRegistry: abstract new (...args: never[]) => Scheduler };
type CronModule = { CronJob: new (cronTime: string, onTick: () => void) => CronJob };

/** Runs of a cron looked ahead to find its longest gap (a weekday cron's weekend, a month's end). */
const CRON_LOOKAHEAD = 8;

/**
 * When a scheduled consumer drains: a cron or an interval, registered in @nestjs/schedule's
 * SchedulerRegistry under `name` so it is visible (and stoppable) there. Built, and checked (the
 * registry present, the cron valid), before any consumer starts; armed by `start`.
 */
export class ConsumerSchedule {
  private stopTimer?: () => void;

  private constructor(
    private readonly arm: (tick: () => void) => () => void,
    /** The longest gap between two drains. */
    readonly periodMs: number,
  ) {}

  static create(
    moduleRef: ModuleRef,
    when: { cron?: string; intervalMs?: number },
    name: string,
    where: { queue: string; label: string },
  ): ConsumerSchedule {
    const feature = `@BatchConsumer('${where.queue}') with a schedule on ${where.label}`;
    const { SchedulerRegistry } = loadOptional<ScheduleModule>('@nestjs/schedule', feature);
    let registry: Scheduler;
    try {
      registry = moduleRef.get(SchedulerRegistry, { strict: false });
    } catch (error) {
      throw missingScheduler(where.queue, where.label, error);
    }
    if (when.intervalMs !== undefined) {
      const every = when.intervalMs;
      return new ConsumerSchedule((tick) => {
        const interval = setInterval(tick, every);
        registry.addInterval(name, interval);
        return () => {
          clearInterval(interval);
          forget(() => registry.deleteInterval(name));
        };
      }, every);
    }
    // @nestjs/schedule does not re-export CronJob, and its registry takes jobs of its own `cron`.
    const { CronJob } = loadOptional<CronModule>('cron', feature, '@nestjs/schedule');
    const cron = when.cron as string;
    let job: CronJob;
    let onTick = () => {};
    try {
      // Not started: a job only arms its timer in start().
      job = new CronJob(cron, () => onTick());
    } catch (error) {
      throw badCron(where.label, cron, describeError(error), error);
    }
    return new ConsumerSchedule((tick) => {
      onTick = tick;
      registry.addCronJob(name, job);
      job.start();
      return () => {
        job.stop();
        forget(() => registry.deleteCronJob(name));
      };
    }, longestGap(job));
  }

  start(tick: () => void): void {
    this.stopTimer ??= this.arm(tick);
  }

  stop(): void {
    this.stopTimer?.();
    this.stopTimer = undefined;
  }
}

function longestGap(job: CronJob): number {
  const runs = job.nextDates(CRON_LOOKAHEAD).map((date) => date.toMillis());
  let gap = 0;
  for (let i = 1; i < runs.length; i++) gap = Math.max(gap, runs[i] - runs[i - 1]);
  return gap;
}

/**
 * @nestjs/schedule clears its registry on shutdown too, before or after us depending on module order:
 * an entry already gone is fine (its timer was stopped above either way).
 */
function forget(remove: () => void): void {
  try {
    remove();
  } catch {
    // already removed by SchedulerRegistry's own shutdown
  }
}
