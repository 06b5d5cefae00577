import type { DelayQueueStore } from '../delay-queue/delay-queue.store';
import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import type { RecurringDeclarationInfo, RepeatInfo } from '../interfaces';
import { QueueKeys } from '../redis/keys';
import type { Scripts } from '../redis/scripts';
import { recurringDeclare, type RecurringDeclareInput, type RecurringDeclared } from './lua/recurring-declare';
import { RECURRING_SCRIPTS } from './lua/recurring.scripts';

/**
 * The Redis side of `@Recurring`: the index of every schedule declared under the prefix (its own key),
 * and each schedule's declarations, which its one-shard DelayQueue's store keeps beside the queue's keys
 * (see recurring-declare.lua). Key names, script arguments and reply decoding, nothing else.
 */
export class RecurringStore {
  private readonly indexKey: string;

  constructor(
    private readonly scripts: Scripts,
    prefix: string,
  ) {
    this.indexKey = QueueKeys.recurringIndex(prefix);
    scripts.add(RECURRING_SCRIPTS);
  }

  /** Records a schedule in the index `list()` reads (a key of its own slot), with the method declaring it. */
  async index(name: string, label: string): Promise<void> {
    await this.scripts.call((client) => client.hset(this.indexKey, name, label));
  }

  /** Every indexed schedule: name → the method that declared it. */
  indexed(): Promise<Record<string, string>> {
    return this.scripts.call((client) => client.hgetall(this.indexKey));
  }

  /** Drops a schedule from the index; true when it was there. */
  async unindex(name: string): Promise<boolean> {
    return (await this.scripts.call((client) => client.hdel(this.indexKey, name))) === 1;
  }

  /** Declares a schedule for this process on its queue's shard, and places the one in effect. */
  declare(queue: DelayQueueStore, input: RecurringDeclareInput): Promise<RecurringDeclared> {
    return queue.declare(recurringDeclare, 0, input);
  }

  /** Withdraws a process' declaration of the schedule (at shutdown). */
  withdraw(queue: DelayQueueStore, declarer: string): Promise<void> {
    return queue.withdrawDeclaration(0, `p:${declarer}`);
  }
}

/**
 * The definitions of a schedule declared by any process, from its declarations hash (see
 * recurring-declare.lua), the one in effect first, then newest first; live: a process declaring it
 * renewed its claim after Redis time `now`.
 */
export function decodeDeclarations(
  fields: Record<string, string>,
  inEffect: RepeatInfo,
  now: number,
): RecurringDeclarationInfo[] {
  const live = new Set<string>();
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith('p:')) continue;
    const at = value.indexOf('|');
    if (Number(value.slice(0, at)) >= now) live.add(value.slice(at + 1));
  }
  const declarations: RecurringDeclarationInfo[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith('d:')) continue;
    const text = field.slice(2);
    const [firstDeclaredAt, , ...by] = value.split('|');
    const { cron, tz, everyMs, missed } = RepeatSchedule.parse(text);
    declarations.push({
      ...(cron !== undefined && { cron }),
      ...(tz !== undefined && { tz }),
      ...(everyMs !== undefined && { everyMs }),
      missed,
      declaredBy: by.join('|'),
      firstDeclaredAt: Number(firstDeclaredAt),
      live: live.has(text),
      inEffect:
        cron === inEffect.cron && tz === inEffect.tz && everyMs === inEffect.everyMs && missed === inEffect.missed,
    });
  }
  return declarations.sort((a, b) => Number(b.inEffect) - Number(a.inEffect) || b.firstDeclaredAt - a.firstDeclaredAt);
}
