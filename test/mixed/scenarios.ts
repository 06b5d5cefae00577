import { fixedQueueViolations, delayQueueViolations } from '@test/support/invariants';
import { allHandled, deliveredTwice, lost, outOfOrder, runsAtOnce, versionsThatRan } from '@test/support/mixed-checks';
import { pollUntil } from '@test/support/testing';
import type { LogEntry, MixedProcess, useMixedVersions, Version } from '@test/support/mixed-versions';

/*
 * The scenarios of the mixed-version suite. Each drives processes of the previous release and of a
 * build of this tree on one Redis and returns the promises its history breaks (an empty list: all
 * kept), so that the same scenario proves the current build compatible (test/mixed/*.mixed-spec.ts)
 * and proves that a deliberately incompatible build is caught (guard.mixed-spec.ts).
 */

export type Mixed = ReturnType<typeof useMixedVersions>;
type Stats = Record<string, number>;

const other = (version: Version): Version => (version === 'previous' ? 'current' : 'previous');
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The history once `done` holds, or as it stands after `timeoutMs` (then the checks say what is missing). */
async function settle(mixed: Mixed, done: (entries: LogEntry[]) => boolean, timeoutMs: number): Promise<LogEntry[]> {
  try {
    return await mixed.until(done, 'the scenario to settle', timeoutMs);
  } catch {
    return mixed.history();
  }
}

/**
 * Pushes numbered messages (seq 0, 1, ... per group) until `stop` resolves: group i only from
 * producers[i % producers.length], one call at a time per group, single pushes and pushMany in turn,
 * so that each group's push order is its seq order. Resolves with how many each group got.
 */
async function pushUntil(
  producers: MixedProcess[],
  queue: string,
  groups: string[],
  stop: Promise<unknown>,
  message: (group: string, seq: number) => Record<string, unknown> = () => ({}),
): Promise<Map<string, number>> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  const pushed = new Map(groups.map((group) => [group, 0]));
  await Promise.all(
    groups.map(async (group, index) => {
      const producer = producers[index % producers.length];
      for (let round = 0; !stopped; round++) {
        const seq = pushed.get(group)!;
        if (round % 2 === 0) await producer.call(queue, 'push', group, { seq, ...message(group, seq) });
        else {
          const batch = [0, 1, 2].map((n) => ({ seq: seq + n, ...message(group, seq + n) }));
          await producer.call(queue, 'pushMany', group, batch);
        }
        pushed.set(group, seq + (round % 2 === 0 ? 1 : 3));
        await pause(15);
      }
    }),
  );
  return pushed;
}

const groupsOf = (label: string, count: number) => Array.from({ length: count }, (_, i) => `${label}-${i}`);

/**
 * An ordered at-least-once FixedQueue under traffic from producers of both versions through a rollout
 * (previous → current, one process SIGTERMed and one SIGKILLed) and a rollback (current → previous,
 * SIGKILL): nothing lost, order kept, one batch of a group at a time, counters that agree.
 */
export async function orderedRollout(mixed: Mixed): Promise<string[]> {
  const producers = [await mixed.start('previous'), await mixed.start('current')];
  const firstOld = await mixed.start('previous', { consume: true });
  const secondOld = await mixed.start('previous', { consume: true });
  let rolled!: () => void;
  const rolling = new Promise<void>((resolve) => (rolled = resolve));
  const groups = groupsOf('g', 16);
  const pushing = pushUntil(producers, 'ordered', groups, rolling);

  const firstNew = await mixed.start('current', { consume: true });
  await firstOld.stop('SIGTERM');
  const secondNew = await mixed.start('current', { consume: true });
  await secondOld.stop('SIGKILL');
  const back = await mixed.start('previous', { consume: true });
  await firstNew.stop('SIGKILL');
  rolled();
  const pushed = await pushing;

  const entries = await settle(mixed, (log) => allHandled(log, 'ordered', pushed), 30_000);
  const problems = [
    ...lost(entries, 'ordered', pushed),
    ...outOfOrder(entries, 'ordered'),
    ...runsAtOnce(entries, 'ordered'),
  ];
  const ran = versionsThatRan(entries, 'ordered');
  if (ran.size !== 2) problems.push(`only ${[...ran]} ran batches`);
  problems.push(...(await agreeingStats(back, secondNew, 'ordered', { pending: 0, dead: 0 })));
  const shape = { prefix: mixed.prefix(), name: 'ordered', shards: 4, capacity: 100_000 };
  problems.push(...(await fixedQueueViolations(mixed.redis(), shape)));
  return problems;
}

/**
 * Both versions read the same counters, and they come to hold `expected` (a handler logs its end
 * just before its acknowledgement is written, so the counters may trail the log by a moment).
 */
async function agreeingStats(
  a: MixedProcess,
  b: MixedProcess,
  queue: string,
  expected: Record<string, number>,
): Promise<string[]> {
  const read = () => Promise.all([a.call<Stats>(queue, 'stats'), b.call<Stats>(queue, 'stats')]);
  const holds = ([left]: Stats[]) => Object.entries(expected).every(([field, value]) => left[field] === value);
  const [left, right] = await pollUntil(
    async () => {
      const both = await read();
      return holds(both) ? both : null;
    },
    `${queue} stats() to reach ${JSON.stringify(expected)}`,
    5_000,
    50,
  ).catch(read);
  const problems: string[] = [];
  for (const [field, value] of Object.entries(expected)) {
    if (left[field] !== value)
      problems.push(`${queue} stats().${field} is ${left[field]} in ${a.version}, not ${value}`);
  }
  for (const field of Object.keys(left)) {
    if (right[field] !== left[field] && field !== 'lagMs')
      problems.push(`${queue} stats().${field}: ${a.version} reads ${left[field]}, ${b.version} ${right[field]}`);
  }
  return problems;
}

/**
 * Failures across versions: batches that fail once, partial acknowledgements, and poison batches
 * dead-lettered, listed by one version, re-queued by the other and handled once cured. Each message
 * handled, in order, never more than maxAttempts deliveries in a row.
 */
export async function failuresAndDeadLetters(mixed: Mixed): Promise<string[]> {
  const previous = await mixed.start('previous', { consume: true });
  const current = await mixed.start('current', { consume: true });
  const pushed = new Map<string, number>();
  const groups = groupsOf('f', 12);
  await Promise.all(
    groups.map(async (group, index) => {
      const producer = index % 2 ? current : previous;
      const kind = index % 4;
      const messages = Array.from({ length: 12 }, (_, seq) => ({
        seq,
        ...(kind === 1 ? { failUntil: 2 } : {}),
        ...(kind === 2 && seq === 4 ? { partialAt: 4 } : {}),
        ...(kind === 3 && seq === 0 ? { poison: true } : {}),
      }));
      await producer.call('failing', 'pushMany', group, messages);
      pushed.set(group, messages.length);
    }),
  );
  const poisoned = groups.filter((_, index) => index % 4 === 3);
  const healthy = new Map([...pushed].filter(([group]) => !poisoned.includes(group)));
  const problems: string[] = [];
  await settle(mixed, (log) => allHandled(log, 'failing', healthy), 20_000);
  const dead = await pollUntil(
    async () => {
      const batches = await previous.call<{ id: string; group: string }[]>('failing', 'deadLetters', 100);
      return new Set(batches.map((batch) => batch.group)).size === poisoned.length ? batches : null;
    },
    'the poison batches to be dead-lettered',
    15_000,
    50,
  ).catch(() => [] as { id: string; group: string }[]);
  if (!dead.length) problems.push(`the poison batches of ${poisoned} were not all dead-lettered`);
  const stats = await current.call<Stats>('failing', 'stats');
  if (stats.deadTotal < poisoned.length) problems.push(`current reads deadTotal ${stats.deadTotal}`);
  await mixed.cure();
  for (const batch of dead) await current.call('failing', 'requeue', batch.id);
  const entries = await settle(mixed, (log) => allHandled(log, 'failing', pushed), 20_000);
  problems.push(
    ...lost(entries, 'failing', pushed),
    ...outOfOrder(entries, 'failing'),
    ...runsAtOnce(entries, 'failing'),
  );
  const over = entries.filter((entry) => entry.q === 'failing' && entry.k === 'start' && entry.attempt > 3);
  if (over.length) problems.push(`${over.length} deliveries past maxAttempts 3`);
  problems.push(...(await agreeingStats(previous, current, 'failing', { pending: 0, dead: 0 })));
  return problems;
}

/**
 * Group and queue controls made by one version and obeyed by the other: a group paused by its
 * exhausted attempts (`onExhausted: 'pause-group'`), listed and resumed across versions; a group
 * paused by hand; a queue paused and resumed; at-most-once messages delivered once each.
 */
export async function controls(mixed: Mixed): Promise<string[]> {
  const previous = await mixed.start('previous', { consume: true });
  const current = await mixed.start('current', { consume: true });
  const problems: string[] = [];

  await current.call('exhausting', 'push', 'x', { seq: 0, poison: true });
  const paused = await pollUntil(
    async () => {
      const page = await previous.call<{ items: { group: string; reason: string }[] }>(
        'exhausting',
        'pausedGroups',
        {},
      );
      return page.items.find((item) => item.group === 'x' && item.reason === 'exhausted') ?? null;
    },
    'the exhausted group to be paused',
    15_000,
    50,
  ).catch(() => null);
  if (!paused) problems.push('the exhausted group was not listed as paused by the previous version');
  await mixed.cure();
  await previous.call('exhausting', 'resumeGroup', 'x');

  await previous.call('loose', 'pauseGroup', 'held');
  const pushed = new Map([
    ['held', 30],
    ['free', 30],
  ]);
  for (const [group, count] of pushed) {
    const producer = group === 'held' ? current : previous;
    for (let seq = 0; seq < count; seq += 10)
      await producer.call(
        'loose',
        'pushMany',
        group,
        Array.from({ length: 10 }, (_, n) => ({ seq: seq + n })),
      );
  }
  const freed = await settle(mixed, (log) => allHandled(log, 'loose', new Map([['free', 30]])), 15_000);
  if (freed.some((entry) => entry.q === 'loose' && entry.group === 'held'))
    problems.push('a group paused by the previous version was delivered by a process');
  await current.call('loose', 'resumeGroup', 'held');

  await current.call('loose', 'pause');
  const pausedFlag = await previous.call<boolean>('loose', 'isPaused');
  if (!pausedFlag) problems.push('the previous version does not see the queue paused by the current one');
  await previous.call('loose', 'pushMany', 'late', [{ seq: 0 }, { seq: 1 }]);
  await previous.call('ordered', 'push', 'sentinel', { seq: 0 });
  const sentinel = await settle(mixed, (log) => allHandled(log, 'ordered', new Map([['sentinel', 1]])), 15_000);
  if (sentinel.some((entry) => entry.q === 'loose' && entry.group === 'late'))
    problems.push('a message of a paused queue was delivered');
  await previous.call('loose', 'resume');
  pushed.set('late', 2);

  const entries = await settle(
    mixed,
    (log) => allHandled(log, 'loose', pushed) && allHandled(log, 'exhausting', new Map([['x', 1]])),
    15_000,
  );
  problems.push(
    ...lost(entries, 'loose', pushed),
    ...deliveredTwice(entries, 'loose'),
    ...lost(entries, 'exhausting', new Map([['x', 1]])),
  );
  return problems;
}

interface Planned {
  id: string;
  runAt: number | null;
  by: Version;
}

/**
 * DelayQueue calls started by one version and finished by the other: each task scheduled by one,
 * then rescheduled, shifted or cancelled by the other, run by consumers of both. Every task that was
 * not cancelled runs once, at or after its last time; a cancelled one never runs.
 */
export async function delayCrossing(mixed: Mixed): Promise<string[]> {
  const producers = { previous: await mixed.start('previous'), current: await mixed.start('current') };
  const plans: Planned[] = [];
  for (let i = 0; i < 40; i++) {
    const by: Version = i % 2 ? 'current' : 'previous';
    const id = `t${i}`;
    const { runAt } = await producers[by].call<{ runAt: number }>(
      'jobs',
      'schedule',
      { tag: id },
      { id, delayMs: 1500 },
    );
    plans.push({ id, runAt, by });
  }
  for (const [i, plan] of plans.entries()) {
    const finisher = producers[other(plan.by)];
    type Moved = { runAt: number } | null;
    // -1: the finisher did not find what the other version scheduled.
    if (i % 4 === 0)
      plan.runAt = (await finisher.call<Moved>('jobs', 'reschedule', plan.id, { delayMs: 2000 }))?.runAt ?? -1;
    else if (i % 4 === 1) plan.runAt = (await finisher.call<Moved>('jobs', 'shift', plan.id, 300))?.runAt ?? -1;
    else if (i % 4 === 2) plan.runAt = (await finisher.call<boolean>('jobs', 'cancel', plan.id)) ? null : -1;
  }
  await mixed.start('previous', { consume: true });
  const consumer = await mixed.start('current', { consume: true });
  const live = plans.filter((plan) => plan.runAt !== null && plan.runAt !== -1);
  const ended = (log: LogEntry[], id: string) => log.some((e) => e.k === 'end' && e.id === id && e.ok);
  const entries = await settle(mixed, (log) => live.every((plan) => ended(log, plan.id)), 15_000);

  const problems: string[] = [];
  for (const plan of plans) {
    const starts = entries.filter((entry) => entry.k === 'start' && entry.id === plan.id);
    if (plan.runAt === null) {
      if (starts.length) problems.push(`${plan.id}: cancelled by ${other(plan.by)} but ran`);
      continue;
    }
    if (plan.runAt === -1) problems.push(`${plan.id}: ${other(plan.by)} did not find what ${plan.by} scheduled`);
    else if (starts.length !== 1) problems.push(`${plan.id}: ran ${starts.length} times`);
    else if (starts[0].runAt !== plan.runAt)
      problems.push(`${plan.id}: ran as due at ${starts[0].runAt}, not at its last time ${plan.runAt}`);
    else if (starts[0].t < plan.runAt - 20) problems.push(`${plan.id}: ran ${plan.runAt - starts[0].t} ms early`);
  }
  problems.push(...runsAtOnce(entries, 'jobs'));
  const stats = await consumer.call<Stats>('jobs', 'stats');
  if (stats.scheduled !== 0 || stats.active !== 0)
    problems.push(`jobs stats() after every run: ${JSON.stringify(stats)}`);
  problems.push(...(await delayQueueViolations(mixed.redis(), { prefix: mixed.prefix(), name: 'jobs', shards: 4 })));
  return problems;
}

/**
 * A task running in a process of one version, replaced (`onExists: 'replace'`) by a process of the
 * other: the replacement runs once, after the first run ended, never beside it.
 */
export async function replaceRunning(mixed: Mixed, runner: Version): Promise<string[]> {
  await mixed.start(runner, { consume: true });
  const producer = await mixed.start(other(runner));
  await producer.call('jobs', 'schedule', { tag: 'first', ms: 1500 }, { id: 'r', delayMs: 0 });
  await mixed.until((log) => log.some((e) => e.k === 'start' && e.tag === 'first'), 'the first run to start', 10_000);
  await producer.call('jobs', 'schedule', { tag: 'second', ms: 10 }, { id: 'r', delayMs: 0, onExists: 'replace' });
  const entries = await settle(mixed, (log) => log.some((e) => e.k === 'end' && e.tag === 'second'), 10_000);
  const runs = entries.filter((entry) => entry.k === 'start' && entry.id === 'r').map((entry) => entry.tag);
  const problems = runsAtOnce(entries, 'jobs');
  if (runs.join() !== 'first,second')
    problems.push(`a ${runner} consumer ran [${runs}] after a ${other(runner)} replacement (expected first,second)`);
  return problems;
}

/**
 * Debounced schedules of one id from both versions in turn, then a repeat declared by one version and
 * withdrawn by the other, with consumers of both: one run of the debounced task (the last payload),
 * every occurrence of the repeat once and one at a time.
 */
export async function debounceAndRepeat(mixed: Mixed): Promise<string[]> {
  const producers = [await mixed.start('previous'), await mixed.start('current')];
  await mixed.start('previous', { consume: true });
  await mixed.start('current', { consume: true });
  const problems: string[] = [];
  for (let i = 0; i < 8; i++) {
    const options = { id: 'd', delayMs: 400, debounce: { maxWaitMs: 5000 } };
    await producers[i % 2].call('jobs', 'schedule', { tag: `d${i}` }, options);
    await pause(50);
  }
  await producers[0].call('jobs', 'repeat', 'rep', { everyMs: 200 }, { tag: 'rep', ms: 30 });
  const repeated = await settle(
    mixed,
    (log) => log.filter((e) => e.k === 'end' && e.tag === 'rep').length >= 6,
    10_000,
  );
  if (repeated.filter((e) => e.k === 'end' && e.tag === 'rep').length < 6)
    problems.push('the repeat did not run 6 times');
  if (!(await producers[1].call<boolean>('jobs', 'unrepeat', 'rep')))
    problems.push('the current version could not withdraw the repeat of the previous one');
  const entries = await settle(mixed, (log) => log.some((e) => e.k === 'end' && e.id === 'd'), 10_000);
  const debounced = entries.filter((entry) => entry.k === 'start' && entry.id === 'd').map((entry) => entry.tag);
  if (debounced.join() !== 'd7') problems.push(`the debounced task ran as [${debounced}], not once as d7`);
  const occurrences = entries.filter((e) => e.k === 'start' && e.tag === 'rep').map((e) => e.occurrence);
  if (new Set(occurrences).size !== occurrences.length) problems.push(`repeat occurrences ran twice: ${occurrences}`);
  problems.push(...runsAtOnce(entries, 'jobs'));
  return problems;
}

/**
 * A task running in a process of one version when that process is SIGKILLed: a process of the other
 * version runs it once its lease lapsed, never beside it.
 */
export async function killedRunner(mixed: Mixed, runner: Version): Promise<string[]> {
  const victim = await mixed.start(runner, { consume: true });
  const producer = await mixed.start(other(runner));
  await producer.call('jobs', 'schedule', { tag: 'k', ms: 3000 }, { id: 'k', delayMs: 0 });
  await mixed.until((log) => log.some((e) => e.k === 'start' && e.id === 'k'), 'the task to start', 10_000);
  await mixed.start(other(runner), { consume: true });
  await victim.stop('SIGKILL');
  const entries = await settle(mixed, (log) => log.some((e) => e.k === 'end' && e.id === 'k' && e.ok), 30_000);
  const problems = runsAtOnce(entries, 'jobs');
  const finished = entries.find((e) => e.k === 'end' && e.id === 'k' && e.ok);
  if (finished?.v !== other(runner))
    problems.push(`the killed ${runner} run was not finished by ${other(runner)}; the log: ${JSON.stringify(entries)}`);
  return problems;
}

/** One `@Recurring` schedule declared by processes of both versions: each tick runs once, one at a time. */
export async function recurringTicks(mixed: Mixed): Promise<string[]> {
  await mixed.start('previous', { consume: true, recurringMs: 200 });
  await mixed.start('current', { consume: true, recurringMs: 200 });
  const entries = await settle(mixed, (log) => log.filter((e) => e.k === 'end' && e.q === 'tick').length >= 10, 15_000);
  const ticks = entries.filter((entry) => entry.k === 'start' && entry.q === 'tick').map((entry) => entry.occurrence);
  const problems = runsAtOnce(entries, 'tick');
  if (ticks.length < 10) problems.push(`${ticks.length} ticks ran in 15 s at a 200 ms period`);
  if (new Set(ticks).size !== ticks.length) problems.push(`a tick ran twice: ${ticks}`);
  return problems;
}

/**
 * Task-source passes run by one version over what the other wrote: the first process restores every
 * row of the model database at start-up, then, with some rows deleted, a pass of the other version with
 * `sweep` cancels their timers. Consumers of both run each remaining row once, at or after its time; a
 * swept one never.
 */
export async function taskSourcePasses(mixed: Mixed, first: Version): Promise<string[]> {
  const redis = mixed.redis();
  const rows = Array.from({ length: 30 }, (_, i) => `row${i}`);
  const [seconds] = await redis.time();
  const runAt = Number(seconds) * 1000 + 4000;
  await redis.hset(`${mixed.logKey()}:rows`, Object.fromEntries(rows.map((id) => [id, runAt])));
  const starter = await mixed.start(first, { consume: true });
  const problems: string[] = [];
  const restored = await pollUntil(
    async () => ((await starter.call<Record<string, number>>('jobs', 'stats')).scheduled === rows.length ? true : null),
    'the start-up pass to restore every row',
    10_000,
    50,
  ).catch(() => false);
  if (!restored) problems.push(`the ${first} process' start-up pass did not restore ${rows.length} rows`);
  const gone = rows.slice(0, 10);
  await redis.hdel(`${mixed.logKey()}:rows`, ...gone);
  const sweeper = await mixed.start(other(first), { consume: true });
  const pass = await sweeper.call<{ swept: number; kept: number }>('jobs', 'reconcile', { sweep: true });
  if (pass.swept !== gone.length || pass.kept !== rows.length - gone.length)
    problems.push(`the ${other(first)} pass swept ${pass.swept} and kept ${pass.kept} (expected 10 and 20)`);
  const live = rows.slice(10);
  const entries = await settle(
    mixed,
    (log) => live.every((id) => log.some((e) => e.k === 'end' && e.id === id && e.ok)),
    20_000,
  );
  for (const id of rows) {
    const runs = entries.filter((entry) => entry.k === 'start' && entry.id === id);
    if (gone.includes(id) && runs.length) problems.push(`${id}: swept, but ran`);
    if (!gone.includes(id) && runs.length !== 1) problems.push(`${id}: ran ${runs.length} times`);
    if (runs.some((run) => run.t < runAt - 20)) problems.push(`${id}: ran before its time`);
  }
  problems.push(...runsAtOnce(entries, 'jobs'));
  return problems;
}

/**
 * DelayQueue traffic through a rollout and a rollback: producers of both versions schedule tasks due
 * within a second while consumers go previous → current (one SIGTERMed, one SIGKILLed) and back (a
 * SIGKILL). Every task runs, at or after its time, never two runs of one id at once; whatever a killed
 * process held runs again after its lease.
 */
export async function delayRollout(mixed: Mixed): Promise<string[]> {
  const producers = [await mixed.start('previous'), await mixed.start('current')];
  const firstOld = await mixed.start('previous', { consume: true });
  const secondOld = await mixed.start('previous', { consume: true });
  const scheduled = new Map<string, number>();
  let rolled = false;
  const scheduling = Promise.all(
    producers.map(async (producer, p) => {
      for (let n = 0; !rolled; n++) {
        const id = `${producer.version}-${p}-${n}`;
        const task = { tag: id, ms: 20 + (n % 5) * 40 };
        const { runAt } = await producer.call<{ runAt: number }>('jobs', 'schedule', task, { id, delayMs: n % 900 });
        scheduled.set(id, runAt);
        await pause(10);
      }
    }),
  );
  const firstNew = await mixed.start('current', { consume: true });
  await firstOld.stop('SIGTERM');
  await mixed.start('current', { consume: true });
  await secondOld.stop('SIGKILL');
  await mixed.start('previous', { consume: true });
  await firstNew.stop('SIGKILL');
  rolled = true;
  await scheduling;

  const done = (log: LogEntry[]) => {
    const ended = new Set(log.filter((e) => e.k === 'end' && e.ok).map((e) => e.id));
    return [...scheduled.keys()].every((id) => ended.has(id));
  };
  const entries = await settle(mixed, done, 30_000);
  const problems = runsAtOnce(entries, 'jobs');
  const ended = new Set(entries.filter((e) => e.k === 'end' && e.ok).map((e) => e.id));
  const missing = [...scheduled.keys()].filter((id) => !ended.has(id));
  if (missing.length) problems.push(`${missing.length} of ${scheduled.size} tasks never ran (first ${missing[0]})`);
  for (const entry of entries)
    if (entry.k === 'start' && entry.attempt === 1 && entry.t < scheduled.get(entry.id!)! - 20)
      problems.push(`${entry.id} ran ${scheduled.get(entry.id!)! - entry.t} ms early`);
  const ran = versionsThatRan(entries, 'jobs');
  if (ran.size !== 2) problems.push(`only ${[...ran]} ran tasks`);
  return problems;
}
