import { Injectable } from '@nestjs/common';
import type { DelayQueueStore } from '../delay-queue/delay-queue.store';
import type { RepeatSchedule } from '../delay-queue/repeat-schedule';
import type { RecurringScheduleInfo } from '../interfaces';
import { QueueRegistry } from '../queue.registry';
import { QueueSettings } from '../queue.settings';
import { deleteQueueMeta } from '../redis/queue-meta';
import { RedisConnection } from '../redis/redis-connection';
import { assertName } from '../validation/payload';
import { recurringQueueOptions, RecurringMounter } from './recurring-mounter';
import { decodeDeclarations, RecurringStore } from './recurring.store';
import { stillDeclared } from './recurring.messages';

/**
 * The `@Recurring` schedules, by name, as `@nestjs/schedule`'s SchedulerRegistry holds its jobs: those
 * this process declares (RecurringMounter mounts them), and every schedule any process of the
 * application declared, listed with those no process declares any more (a `@Recurring` removed from the
 * code) for `remove()`.
 */
@Injectable()
export class RecurringSchedules {
  private readonly store: RecurringStore;

  /** @internal Made by Nest (QueueModule), not by the application. */
  constructor(
    private readonly mounter: RecurringMounter,
    private readonly registry: QueueRegistry,
    private readonly connection: RedisConnection,
    settings: QueueSettings,
  ) {
    this.store = new RecurringStore(connection.scripts, settings.prefix);
  }

  /** Declares every schedule of this process again now (RecurringMounter does so every few seconds). */
  redeclare(): Promise<void> {
    return this.mounter.redeclare();
  }

  /** Withdraws this process' declarations (RecurringMounter does so at shutdown). */
  withdraw(): Promise<void> {
    return this.mounter.withdraw();
  }

  /** The schedules this process declares: name → schedule. */
  declared(): Map<string, RepeatSchedule> {
    return new Map([...this.mounter.mounted()].map(([name, { schedule }]) => [name, schedule]));
  }

  /**
   * Every schedule declared by any process of the application (under this prefix), with its next and
   * last run; `handled` says whether this process runs it. A schedule no process declares any more
   * stays listed (and its next run falls behind) until `remove(name)`. O(schedules).
   */
  async list(): Promise<RecurringScheduleInfo[]> {
    const index = await this.store.indexed();
    const listed = await Promise.all(
      Object.entries(index).map(async ([name, label]) => {
        const queue = this.queueStoreOf(name);
        const [repeat, fields] = await Promise.all([queue.repeatInfo(0, name), queue.declarations(0)]);
        if (repeat === null) return undefined;
        const { cron, tz, everyMs, missed, nextRunAt, lastRunAt, lastOutcome, lastSuccessAt } = repeat;
        const info: RecurringScheduleInfo = {
          name,
          declaredBy: label,
          handled: this.mounter.mounted().has(name),
          ...(cron !== undefined && { cron }),
          ...(tz !== undefined && { tz }),
          ...(everyMs !== undefined && { everyMs }),
          missed,
          nextRunAt,
          ...(lastRunAt !== undefined && { lastRunAt }),
          ...(lastOutcome !== undefined && { lastOutcome }),
          ...(lastSuccessAt !== undefined && { lastSuccessAt }),
          declarations: decodeDeclarations(fields, repeat, this.connection.clock.estimate()),
        };
        return info;
      }),
    );
    return listed.filter((info) => info !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Deletes a schedule no process of this one declares (a `@Recurring` removed from the code): its
   * occurrence, its queue's keys and its entry in the list. True when it was listed. Refused while this
   * process declares it; other processes still declaring it declare it again within seconds.
   */
  async remove(name: string): Promise<boolean> {
    assertName(name, 'name');
    const declaration = this.mounter.mounted().get(name);
    if (declaration !== undefined) throw stillDeclared(name, declaration.label);
    const removed = await this.store.unindex(name);
    const queue = this.queueStoreOf(name);
    await queue.obliterate(0);
    await deleteQueueMeta(this.connection, queue.keys);
    return removed;
  }

  /**
   * The store of a schedule's queue: this process' own when it runs the schedule, else one over the
   * same keys (a schedule that only another process, or none any more, declares).
   */
  private queueStoreOf(name: string): DelayQueueStore {
    const own = this.mounter.mounted().get(name);
    if (own !== undefined) return own.queue.store;
    return this.registry.delayQueueStore(recurringQueueOptions(name), `@Recurring "${name}"`);
  }
}
