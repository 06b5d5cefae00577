import { QueueConfigError } from '../errors';
import type { ReconcileResult, ReconcileTrigger } from '../interfaces';

/** The texts of task sources and their passes, in one place. */

export const noTaskSource = (queue: string) =>
  new QueueConfigError(
    `reconcile: delay queue "${queue}" has no task source in this application: mark a provider method ` +
      `@TaskSource('${queue}') that lists the tasks it should hold (see docs/delay-queue.md, "Task source")`,
  );

export const notIterable = (label: string, got: string) =>
  new QueueConfigError(
    `@TaskSource ${label} returned ${got}: it must return an Iterable or AsyncIterable of ` +
      '{ id, runAt? | delayMs?, payload } (an async generator over a cursor, for example)',
  );

export const secondTaskSource = (queue: string, first: string, second: string) =>
  new QueueConfigError(
    `delay queue "${queue}" has two task sources, ${first} and ${second}: a queue takes one @TaskSource, ` +
      'which lists every task it should hold',
  );

const WHY: Record<ReconcileTrigger, string> = {
  'record-created': 'its record was created (a first start, or data lost while no process ran)',
  'data-lost': 'its data was lost',
  'write-failed': 'a schedule, reschedule or cancel gave up while Redis was away',
  schedule: 'on schedule',
  call: 'reconcile() called',
};

export const passDone = (label: string, trigger: ReconcileTrigger, r: ReconcileResult) =>
  `Task source ${label} (${WHY[trigger]}): listed ${r.listed}, restored ${r.restored}, kept ${r.kept}, ` +
  `swept ${r.swept}, invalid ${r.invalid}, in ${r.durationMs} ms`;

export const passFailed = (label: string, trigger: ReconcileTrigger, detail: string) =>
  `Task source ${label} (${WHY[trigger]}) failed: ${detail}; nothing was swept, what it wrote stays. ` +
  (trigger === 'schedule' || trigger === 'call'
    ? 'Its next scheduled pass, or reconcile(), runs it again'
    : 'It is still owed: a process with the source runs it again once its lease runs out (10 s)');

export const rowRefused = (label: string, id: string, why: string) =>
  `Task source ${label}: skipped task ${id}: ${why}`;

export const moreRowsRefused = (label: string, count: number, logged: number) =>
  `Task source ${label}: ${count} tasks were refused in this pass (the first ${logged} are logged above)`;

/** What the application can do about a lost queue, logged with the loss. */
export const dataLost = (queue: string, kind: 'fixed' | 'delay', restoring: boolean) =>
  `Queue "${queue}": its record was missing in Redis after this process had seen it, so its data was lost ` +
  '(FLUSHALL, a restart without persistence, a failover to an empty replica); recorded it again. ' +
  (kind === 'fixed'
    ? 'Its messages cannot be rebuilt; health reports the loss until acknowledgeDataLoss().'
    : `A pass of its task source is owed (recorded in Redis): ${restoring ? 'this process or another' : 'a process'} ` +
      `with @TaskSource('${queue}') runs it within about a second, once across processes, and health reports the ` +
      'loss until it ends. Health says so when no live process has one: then acknowledgeDataLoss() clears the loss.');
