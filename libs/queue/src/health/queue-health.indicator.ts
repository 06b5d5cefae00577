import { badHealthTimeout, unknownHealthQueue } from '../queue.messages';
import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { describeError } from '../utils/errors';
import { deadline } from '../utils/timers';
import { loadOptional } from '../optional-dependency';
import { ConsumerRegistry } from '../consumer/consumer.registry';
import { QueueRegistry } from '../queue.registry';
import { HEALTH_DEFAULTS } from '../queue.defaults';
import { QueueSettings } from '../queue.settings';
import { RedisConnection } from '../redis/redis-connection';
import { QueueProcesses } from '../queue-processes';
import { RecurringSchedules } from '../recurring/recurring-schedules';
import type { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { timedOut } from '../redis/connection-failure';
import { assertCallOptions, CALL_OPTIONS } from '../validation/call-options';
import type {
  DelayQueueStats,
  FixedQueueStats,
  QueueHealthDetails,
  QueueHealthOptions,
  QueueHealthResult,
  RecurringHealthDetails,
  RecurringScheduleInfo,
} from '../interfaces';
import { QueueConnectionError } from '../errors';
import type { RecordState } from '../redis/queue-meta';
import { dataLostProblem, passOwedProblem, recordMissing } from '../queue.messages';
import type { ConsumerStatus } from '../consumer/consumer-runtime';

/** A queue all of whose consumers here drain on a schedule waits up to the longest of their periods. */
function scheduledPeriod(consumers: ConsumerStatus[]): number | undefined {
  if (consumers.length === 0 || consumers.some((consumer) => consumer.periodMs === undefined)) return undefined;
  return Math.max(...consumers.map((consumer) => consumer.periodMs as number));
}

/**
 * How late a schedule's pending tick is when that is more than two of its periods plus the grace (the
 * period is the gap from that tick to the next); undefined when it is not, or its schedule has ended.
 */
function overdue(schedule: RepeatSchedule | undefined, nextRunAt: number, now: number, graceMs: number) {
  const following = schedule?.next(nextRunAt);
  if (following == null) return undefined;
  const lateMs = now - nextRunAt;
  return lateMs > 2 * (following - nextRunAt) + graceMs ? lateMs : undefined;
}

/** The part of terminus' HealthIndicatorService (≥ 11) this uses. */
interface HealthIndicators {
  check(key: string): { up(data: object): unknown; down(data: object): unknown };
}

type Terminus = { HealthIndicatorService: new () => HealthIndicators };

/**
 * A health indicator for @nestjs/terminus (an optional dependency, loaded on the first check): up when
 * Redis answers PING in time, this process' consumers are running, and each queue's backlog and lag
 * are within the limits given; down with the reason otherwise.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.queues.isHealthy('queues', { maxLagMs: 30_000 })]); }
 * ```
 */
@Injectable()
export class QueueHealthIndicator {
  private indicators?: HealthIndicators;

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly connection: RedisConnection,
    private readonly registry: QueueRegistry,
    private readonly consumerStatus: ConsumerRegistry,
    private readonly settings: QueueSettings,
    private readonly moduleRef: ModuleRef,
    private readonly recurring: RecurringSchedules,
    private readonly processes: QueueProcesses,
  ) {}

  async isHealthy<Key extends string>(key: Key, options: QueueHealthOptions = {}): Promise<QueueHealthResult<Key>> {
    assertCallOptions('isHealthy(key, options)', options, CALL_OPTIONS.health);
    const indicator = this.terminus().check(key);
    const { queues, limits } = this.select(options);
    const timeoutMs = options.timeoutMs ?? HEALTH_DEFAULTS.timeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw badHealthTimeout(timeoutMs);
    const down = (data: object) => indicator.down(data) as QueueHealthResult<Key>;

    let stats: (FixedQueueStats | DelayQueueStats)[];
    let paused: boolean[];
    let eviction: { evictionPolicy: string; warning?: string };
    let schedules: RecurringScheduleInfo[];
    let records: RecordState[];
    const late = [`PING took longer than ${timeoutMs} ms`, `the queues' stats took longer than ${timeoutMs} ms`];
    try {
      await deadline(this.connection.client.ping(), timeoutMs, late[0]);
      [stats, eviction, paused, schedules, records] = await deadline(
        Promise.all([
          Promise.all(queues.map(({ queue }) => queue.stats())),
          this.eviction(),
          Promise.all(queues.map(({ queue }) => queue.isPaused())),
          this.recurring.list(),
          Promise.all(queues.map(({ queue }) => queue.record.state())),
        ]),
        timeoutMs,
        late[1],
      );
    } catch (error) {
      return down({ redis: 'down', message: this.unavailable(error, late) });
    }

    const problems: string[] = [];
    const { warning: evictionWarning, ...policy } = eviction;
    const warnings = evictionWarning ? [evictionWarning] : [];
    if (evictionWarning && this.settings.evictionPolicy === 'fail') problems.push(evictionWarning);
    const checked = new Set(queues.map(({ name }) => name));
    const consumers = this.consumerStatus.statuses().filter((consumer) => checked.has(consumer.queue));
    if (this.settings.consumers) {
      const stopped = consumers.filter((consumer) => !consumer.running).map((consumer) => consumer.consumer);
      if (stopped.length > 0) problems.push(`consumers not running: ${stopped.join(', ')}`);
      for (const { consumer, stalled } of consumers)
        if (stalled !== undefined) problems.push(`${consumer} stopped claiming: ${stalled}`);
    }
    const details: Record<string, QueueHealthDetails> = {};
    queues.forEach(({ kind, name }, i) => {
      const backlog = kind === 'fixed' ? (stats[i] as FixedQueueStats).pending : (stats[i] as DelayQueueStats).due;
      const { lagMs } = stats[i];
      const own = consumers.filter((consumer) => consumer.queue === name);
      const drainedEveryMs = scheduledPeriod(own);
      const timedOutHandlers = own.reduce((sum, consumer) => sum + consumer.timedOut, 0);
      const overdueHandlers = own.flatMap(({ consumer, overdue }) =>
        overdue.map((handler) => ({ consumer, ...handler })),
      );
      const pausedGroups = kind === 'fixed' ? (stats[i] as FixedQueueStats).pausedGroups : 0;
      const { missing, lostAt, lastPass, owed, sourceLive } = records[i];
      const { maxBacklog, maxLagMs, dataLoss = HEALTH_DEFAULTS.dataLoss } = { ...options, ...limits[name] };
      // A pass owed where no live process has a source (a queue without one) is nothing to wait for.
      const rebuilding = owed !== undefined && sourceLive;
      if (missing) problems.push(recordMissing(name));
      // Once its record is back the queue works again: what it lost is reported, not a reason to be
      // unready, unless its task source has yet to write it back.
      else if (rebuilding) problems.push(passOwedProblem(name, owed.at, owed.why));
      if (!missing && lostAt !== undefined)
        (dataLoss === 'fail' ? problems : warnings).push(dataLostProblem(name, kind, lostAt, sourceLive));
      details[name] = {
        kind,
        backlog,
        lagMs,
        consumers: own.filter((consumer) => consumer.running).length,
        ...(drainedEveryMs !== undefined && { drainedEveryMs }),
        ...(timedOutHandlers > 0 && { timedOutHandlers }),
        ...(overdueHandlers.length > 0 && { overdueHandlers }),
        ...(paused[i] && { paused: true as const }),
        ...(pausedGroups > 0 && { pausedGroups }),
        ...(lostAt !== undefined && { dataLostAt: lostAt }),
        ...(rebuilding && { passOwedAt: owed.at }),
        ...(kind === 'delay' && lostAt !== undefined && { taskSourceLive: sourceLive }),
        ...(lastPass !== undefined && { lastReconcile: lastPass }),
      };
      if (paused[i]) return;
      if (maxBacklog !== undefined && backlog > maxBacklog)
        problems.push(`${name}: backlog ${backlog} > ${maxBacklog}`);
      if (maxLagMs === undefined) return;
      // Between two scheduled drains a queue waits by design: only lag beyond the period is late.
      const allowed = maxLagMs + (drainedEveryMs ?? 0);
      if (lagMs > allowed)
        problems.push(
          drainedEveryMs === undefined
            ? `${name}: lag ${lagMs} ms > ${maxLagMs} ms`
            : `${name}: lag ${lagMs} ms > ${allowed} ms (maxLagMs ${maxLagMs} + drained every ${drainedEveryMs} ms)`,
        );
    });
    // Each @Recurring schedule run here is a queue above (its lag is how late its tick is); listed here
    // too are those no process of this code runs any more (handled: false), to be removed.
    const graceMs = options.recurringGraceMs ?? HEALTH_DEFAULTS.recurringGraceMs;
    const recurring: Record<string, RecurringHealthDetails> = {};
    const declared = this.recurring.declared();
    const now = this.connection.clock.estimate();
    for (const { name, handled, nextRunAt, lastOutcome, lastSuccessAt, declarations } of schedules) {
      const overdueMs = handled ? overdue(declared.get(name), nextRunAt, now, graceMs) : undefined;
      if (overdueMs !== undefined)
        problems.push(
          `recurring "${name}": its tick of ${new Date(nextRunAt).toISOString()} is ${overdueMs} ms late (more than two periods + recurringGraceMs ${graceMs} ms): nothing runs it`,
        );
      recurring[name] = {
        handled,
        nextRunAt,
        ...(lastOutcome !== undefined && { lastOutcome }),
        ...(lastSuccessAt !== undefined && { lastSuccessAt }),
        ...(overdueMs !== undefined && { overdueMs }),
        ...(declarations.filter((each) => each.live).length > 1 && { conflict: true as const }),
      };
    }
    for (const name of declared.keys()) {
      if (recurring[name] !== undefined) continue;
      recurring[name] = { handled: true, missing: true };
      problems.push(
        `recurring "${name}": declared here but missing in Redis (its data was lost?); being declared again`,
      );
    }
    // Informative, never down by itself: without hints consumers still find work, by polling.
    const subscriber = this.connection.subscriberStatus();
    const data = {
      redis: 'up',
      ...policy,
      ...(warnings.length > 0 && { warning: warnings.join('; ') }),
      queues: details,
      ...(Object.keys(recurring).length > 0 && { recurring }),
      ...(subscriber && { subscriber }),
      // Which versions share this prefix (a deploy under way shows two) and the contract this process keeps to.
      processes: { versions: this.processes.versions(), dataContract: this.processes.contract },
    };
    if (problems.length > 0) return down({ ...data, message: problems.join('; ') });
    return indicator.up(data) as QueueHealthResult<Key>;
  }

  /**
   * Why Redis is down, truthfully: it did not answer in time (up, perhaps, but frozen or busy), or it
   * could not be reached at all (refused, closed, …). A queue call's error says which already.
   */
  private unavailable(error: unknown, late: string[]): string {
    if (error instanceof QueueConnectionError) return error.message;
    const answered = timedOut(error) || (error instanceof Error && late.includes(error.message));
    return `${answered ? 'Redis did not answer' : 'Redis could not be reached'}: ${this.connection.describeFailure(error)}`;
  }

  /** Redis' eviction policy, and the warning it deserves when it is not `noeviction`. */
  private async eviction(): Promise<{ evictionPolicy: string; warning?: string }> {
    let policies: string[];
    try {
      policies = [...new Set((await this.connection.evictionPolicies()).map(({ policy }) => policy))];
    } catch (error) {
      if (error instanceof QueueConnectionError) throw error;
      return { evictionPolicy: 'unknown', warning: `maxmemory-policy could not be read: ${describeError(error)}` };
    }
    const evictionPolicy = policies.join(', ');
    if (policies.every((policy) => policy === 'noeviction')) return { evictionPolicy };
    return {
      evictionPolicy,
      warning: `maxmemory-policy ${evictionPolicy}: Redis may evict queued work silently; set noeviction`,
    };
  }

  private select({ queues: chosen }: QueueHealthOptions) {
    const all = this.registry.all();
    const find = (name: string) => {
      const found = all.find((entry) => entry.name === name);
      if (!found)
        throw unknownHealthQueue(
          name,
          all.map((entry) => entry.name),
        );
      return found;
    };
    if (chosen === undefined) return { queues: all, limits: {} };
    if (Array.isArray(chosen)) return { queues: chosen.map(find), limits: {} };
    for (const name of Object.keys(chosen)) find(name);
    return { queues: all, limits: chosen };
  }

  /** terminus' own service when TerminusModule is imported; otherwise one of ours (it holds no state we rely on). */
  private terminus(): HealthIndicators {
    if (this.indicators) return this.indicators;
    const { HealthIndicatorService } = loadOptional<Terminus>('@nestjs/terminus', 'QueueHealthIndicator');
    try {
      this.indicators = this.moduleRef.get(HealthIndicatorService, { strict: false });
    } catch {
      this.indicators = new HealthIndicatorService();
    }
    return this.indicators;
  }
}
