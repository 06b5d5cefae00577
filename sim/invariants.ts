import { FIXED_GUARANTEES } from './fixed-invariants';
import { Violation } from './world';

/**
 * Every promise the simulation checks, with the sentence of the docs it checks (docs/guarantees.md
 * unless another page is named). docs/guarantees.md links each guarantee here by its name.
 */
export const GUARANTEES = {
  'one-batch-per-group': {
    where: 'guarantees.md, Delivery: FixedQueue, ordered',
    quote:
      "one batch of a group at a time, in push order: A group's next batch is claimable only once the previous one was acknowledged, or its lease (`leaseMs`) ran out.",
  },
  'push-order': {
    where: 'guarantees.md, Delivery: FixedQueue, ordered',
    quote: 'one batch of a group at a time, in push order',
  },
  'at-most-once': {
    where: 'guarantees.md, Delivery: FixedQueue, at-most-once',
    quote: 'at most once per message: A claimed batch has left Redis.',
  },
  'nothing-lost': {
    where: 'guarantees.md, Delivery: FixedQueue, at-least-once',
    quote:
      'at least once per message, unless evicted or expired first (counted) ... Messages evicted by `capacity` or expired by `maxAgeMs`/`ttlMs` before acknowledgement are counted in `dropped`/`expired`, not redelivered.',
  },
  'delivered-only-pushed': {
    where: 'guarantees.md, Delivery',
    quote: 'A batch stays in Redis until acknowledged with its fencing token',
  },
  capacity: {
    where: 'guarantees.md, Paused groups',
    quote: '`capacity` (oldest evicted, counted in `dropped`) and `maxAgeMs` (counted in `expired`) still bound it',
  },
  'max-age': {
    where: 'guarantees.md, Paused groups',
    quote: '`capacity` (oldest evicted, counted in `dropped`) and `maxAgeMs` (counted in `expired`) still bound it',
  },
  'max-attempts': {
    where: 'guarantees.md, Attempts across restarts',
    quote:
      "after `maxAttempts` the claim that meets it next dead-letters the batch or task (FixedQueue's `onExhausted: 'pause-group'` pauses the group instead",
  },
  'attempts-counted': {
    where: 'guarantees.md, Attempts across restarts',
    quote:
      'Attempts are counted wherever the work ran. A delivery that shutdown gives back (`app.close()` ran out of `shutdownTimeoutMs`) counts as an attempt when its handler was past `handlerTimeoutMs`',
  },
  'nothing-claimed-while-paused': {
    where: 'guarantees.md, Paused groups',
    quote: "A FixedQueue group paused by `pauseGroup` or by `onExhausted: 'pause-group'` ... keeps its messages",
  },
  'paused-kept': {
    where: 'guarantees.md, Paused groups',
    quote: 'A FixedQueue group paused ... is never deleted by `ttlMs`, however long it stays paused',
  },
  'pause-announced': {
    where: 'guarantees.md, Paused groups',
    quote:
      'A paused group keeps its messages, and every pause is announced. ... a last attempt whose lease ran out in the process whose claim found it so (before, that one was paused silently).',
  },
  'one-run-per-id': {
    where: 'guarantees.md, Delivery: DelayQueue',
    quote:
      "A schedule that replaces a running task (`onExists: 'replace'`, a winning `'earlier'`/`'later'`, `debounce`) never runs the new version beside it: the new version waits until the running delivery settles",
  },
  'runs-at-or-after': {
    where: 'delay-queue.md: a task runs at its time',
    quote: 'the new version waits until the running delivery settles ..., then runs at its time',
  },
  'one-run-per-tick': {
    where: 'guarantees.md, Delivery: DelayQueue repeats, `@Recurring`',
    quote: 'one run per tick, never two of a schedule at once',
  },
  'recurring-redeclared': {
    where: 'guarantees.md, Delivery: DelayQueue repeats, `@Recurring`',
    quote:
      'A schedule Redis lost with its data (FLUSHALL, a restart without persistence, a failover to an empty replica) is declared again by a running process that declares it',
  },
  'applied-once': {
    where: 'guarantees.md, Calls that fail',
    quote:
      "Every retried write is applied at most once. ... the first try Redis runs records its result in the call's shard, and every later try within the window gets that result and writes nothing",
  },
  'pass-no-undo': {
    where: 'guarantees.md, Data loss and the task source',
    quote:
      "a pass never writes back nor sweeps a task written after it began (the next pass reads the database's new state)",
  },
  'pass-restores': {
    where: 'guarantees.md, Data loss and the task source',
    quote:
      "every task the source lists is written again (`onExists: 'keep'`), once across processes ... the loss is cleared by the pass",
  },
  'pass-owed': {
    where: 'guarantees.md, Data loss and the task source',
    quote:
      'The process that creates the record again (one across all: the creation is one script), whatever it runs (an API pod with no `@TaskSource` and `consumers: false` too), records the loss with it and that a pass of the task source is owed',
  },
  'owed-pass-runs': {
    where: 'guarantees.md, Data loss and the task source',
    quote:
      'Every process with a source runs the owed pass, once across them (a lease on it, taken over if its process dies)',
  },
  'delay-stats-agree': {
    where: 'delay-queue.md, stats()',
    quote:
      '`scheduledTotal` | tasks | written by `schedule` ... `fired` | deliveries | claims by consumers ... `completed` | tasks | acknowledged ... `givenBack` | deliveries | given back unfinished by `app.close()`',
  },
  'stats-agree': {
    where: 'guarantees.md, Attempts across restarts; fixed-queue.md and delay-queue.md, stats()',
    quote: 'Evictions at capacity, age and TTL are counted in `stats()`, never silent.',
  },
} as const;

const ALL = { ...GUARANTEES, ...FIXED_GUARANTEES };

export type Guarantee = keyof typeof ALL;

export function violated(name: Guarantee, detail: string): never {
  const { where, quote } = ALL[name];
  throw new Violation(name, `${where}: "${quote}"`, detail);
}
