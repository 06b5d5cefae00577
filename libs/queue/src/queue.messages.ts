import { inspect, isDeepStrictEqual } from 'node:util';
import { QueueConfigError, QueueInputError, QueueInUseError, UnknownQueueError } from './errors';
import type { QueueKind } from './interfaces';

const REGISTER = { fixed: 'QueueModule.registerFixedQueue', delay: 'QueueModule.registerDelayQueue' };

export const unknownQueue = (kind: QueueKind, name: string, known: string[]) =>
  new UnknownQueueError(
    `No ${kind} queue named "${name}" is registered` +
      (known.length ? ` (registered: ${known.map((k) => `"${k}"`).join(', ')})` : '') +
      `; import ${REGISTER[kind]}({ name: '${name}', ... }) in a module of this application`,
  );

export const unknownQueueName = (name: string, known: string[]) =>
  new UnknownQueueError(
    `No queue named "${name}" is registered` +
      (known.length ? ` (registered: ${known.map((k) => `"${k}"`).join(', ')})` : '') +
      `; register it with QueueModule.registerFixedQueue or registerDelayQueue`,
  );

export const queueKindConflict = (name: string, first: QueueKind, second: QueueKind) =>
  new QueueConfigError(
    `"${name}" is registered as a ${first} queue and as a ${second} queue; a name holds one queue of one kind: ` +
      `rename one of them (${REGISTER[first]} / ${REGISTER[second]})`,
  );

const DECORATORS = {
  fixed: { type: 'FixedQueue', consume: '@BatchConsumer', inject: '@InjectFixedQueue' },
  delay: { type: 'DelayQueue', consume: '@DelayConsumer', inject: '@InjectDelayQueue' },
};

export const wrongKind = (name: string, is: QueueKind, asked: QueueKind) =>
  new UnknownQueueError(
    `No ${asked} queue named "${name}": "${name}" is a ${DECORATORS[is].type} (${REGISTER[is]}). ` +
      `Consume it with ${DECORATORS[is].consume}('${name}') and inject it with ${DECORATORS[is].inject}('${name}'); ` +
      `${DECORATORS[asked].consume} and ${DECORATORS[asked].inject} are for a ${DECORATORS[asked].type}`,
  );

export const missingRoot = (method: string, name: unknown) =>
  new QueueConfigError(
    `${method}({ name: ${JSON.stringify(name)} }) needs QueueModule.forRoot(), which no module imports: ` +
      `import QueueModule.forRoot({ connection }) (or forRootAsync) once, in the application's root module`,
  );

export const asyncQueueName = (method: string) =>
  new QueueConfigError(
    `${method} needs a name (a string) beside useFactory: the queue's injection token is made from it before the factory runs`,
  );

export const factoryRenamed = (name: string, given: unknown) =>
  new QueueConfigError(
    `The useFactory of queue "${name}" returned name ${JSON.stringify(given)}; leave name out of what it returns (the name given beside useFactory is the queue's)`,
  );

export const duplicateQueue = (name: string, first: unknown, second: unknown, firstIn: string, secondIn: string) => {
  const [a, b] = [first, second].map((options) => (options ?? {}) as Record<string, unknown>);
  const shown = (value: unknown) => (value === undefined ? 'not given' : inspect(value, { breakLength: Infinity }));
  const differing = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((key) => !isDeepStrictEqual(a[key], b[key]))
    .map((key) => `${key}: ${shown(a[key])} in ${firstIn}, ${shown(b[key])} in ${secondIn}`);
  return new QueueConfigError(
    `The queue "${name}" is registered twice with different options (${differing.join('; ')}). ` +
      `Register it once, with its options, in one module: a registered queue can be injected and consumed in every module`,
  );
};

export const missingScheduler = (queue: string, method: string, cause: unknown) =>
  new QueueConfigError(
    `@BatchConsumer('${queue}') on ${method} asks for a cron or interval schedule, ` +
      `but @nestjs/schedule is not set up: install it and import ScheduleModule.forRoot() in the application module`,
    { cause },
  );

export const requestScopedConsumer = (decorator: string, target: string) =>
  new QueueConfigError(
    `${decorator} on ${target}: a request-scoped provider (Scope.REQUEST, or depending on one) cannot consume queues, ` +
      `since no request creates it; make it a singleton, and move what needs the request into the handler's own calls`,
  );

export const badCron = (label: string, cron: string, reason: string, cause: unknown) =>
  new QueueConfigError(
    `@BatchConsumer on ${label}: cron "${cron}" is not a cron expression (${reason}); ` +
      `six fields with seconds ('*/30 * * * * *') or five without ('0 * * * *')`,
    { cause },
  );

export const replacedQueue = (kind: QueueKind, name: string, label: string): string =>
  `${label}: the ${kind} queue "${name}" is replaced by a provider override (not a ${kind === 'fixed' ? 'FixedQueue' : 'DelayQueue'}), so this consumer does not run`;

export const unknownEvent = (where: string, event: string, known: readonly string[]) =>
  new QueueConfigError(
    `${where}"${event}" is not a queue event; listen to one of ${known.map((name) => `"${name}"`).join(', ')}`,
  );

export const listenerNotFunction = (event: string) =>
  new QueueConfigError(`QueueEvents.on('${event}', listener): listener must be a function`);

export const notAMethod = (where: string, method: string, type: string | undefined) =>
  new QueueConfigError(`${where}: onFailed names "${method}", which is not a method of ${type}`);

export const factoryNotFunction = (where: string) => new QueueConfigError(`${where}: useFactory must be a function`);

export const injectNotArray = (where: string) => new QueueConfigError(`${where}: inject must be an array of providers`);

export const injectMissing = (where: string, token: string, cause: unknown) =>
  new QueueConfigError(`${where}: inject lists ${token}, which no module of the application provides`, { cause });

export const factoryThrew = (where: string, reason: string, cause: unknown) =>
  new QueueConfigError(`${where}: the options' useFactory threw: ${reason}`, { cause });

export const badHealthTimeout = (timeoutMs: unknown) =>
  new QueueInputError(`isHealthy: timeoutMs must be a positive number of ms, got ${String(timeoutMs)}`);

export const unknownHealthQueue = (name: string, known: string[]) =>
  new UnknownQueueError(
    `isHealthy: no queue named "${name}" is registered (registered: ${known.map((each) => `"${each}"`).join(', ')})`,
  );

export const missingPeer = (feature: string, pkg: string) =>
  new QueueConfigError(`${feature} needs the optional dependency ${pkg}, which is not installed: npm install ${pkg}`);

export const queueInUse = (kind: QueueKind, name: string, consumers: string[]) =>
  new QueueInUseError(
    `The ${kind} queue "${name}" cannot be obliterated while its consumers run in this process (${consumers.join(', ')}): ` +
      `close the application or start it with consumers: false first, or pass { force: true }`,
    consumers,
  );

/** Logged at start-up: a queue given a reconcile period has nothing to run in this application. */
export const periodWithoutSource = (queue: string) =>
  `Delay queue "${queue}": reconcile.everyMs / reconcile.cron is given but no provider method of this application ` +
  `is its @TaskSource('${queue}'), so nothing runs on that schedule here`;

/** A health problem: a record this process had seen is gone, and no check has written it again yet. */
export const recordMissing = (queue: string) =>
  `${queue}: its record is missing in Redis (its data was lost?); written again within 15 s, at once on a reconnection`;

/** A health warning (a problem with `dataLoss: 'fail'`): the queue's data was lost and nobody has dealt with it yet. */
export const dataLostProblem = (queue: string, kind: 'fixed' | 'delay', lostAt: number, sourceLive: boolean) =>
  `${queue}: its data was lost (its record was found missing in Redis at ${new Date(lostAt).toISOString()}); ` +
  (kind === 'fixed'
    ? 'acknowledgeDataLoss() once handled'
    : sourceLive
      ? 'the pass of its @TaskSource owed since then rebuilds it'
      : `no live process has a @TaskSource('${queue}') to rebuild it: start one, or acknowledgeDataLoss() once handled`);

/** A health problem: a pass of a DelayQueue's task source is owed, and a live process has the source. */
export const passOwedProblem = (queue: string, at: number, why: string) =>
  `${queue}: a pass of its @TaskSource is owed since ${new Date(at).toISOString()} (${why}); a process with ` +
  'the source runs it';

/** A live process under the prefix speaks a data contract this one cannot work beside. */
export function incompatibleProcess(
  prefix: string,
  mine: { version: string; contract: number },
  theirs: { id: string; version: string; contract: number },
  ownTooOld: boolean,
): string {
  const what = ownTooOld
    ? `it needs processes of data contract ${theirs.contract} or later to be gone, or this version to be newer`
    : `this version works beside data contract ${mine.contract} and later only`;
  return (
    `Process ${theirs.id} runs nestjs-redis-queues ${theirs.version} (data contract ${theirs.contract}) under the prefix ` +
    `"${prefix}", and this process runs ${mine.version} (data contract ${mine.contract}): ${what}. ` +
    (ownTooOld
      ? `Finish the rollout instead of rolling back past it, or deploy ${theirs.version} here (Upgrading, in the README).`
      : `Stop the ${theirs.version} processes first, or upgrade through the release in between (Upgrading, in the README).`)
  );
}
