import 'reflect-metadata';
import { QueueConfigError } from '../errors';
import {
  BATCH_CONSUMER_DEFAULTS,
  DASHBOARD_DEFAULTS,
  DELAY_QUEUE_DEFAULTS,
  FIXED_QUEUE_DEFAULTS,
  MODULE_DEFAULTS,
} from '../queue.defaults';
import { QueueSettings } from '../queue.settings';
import { resolveOptions } from './apply-rules';
import { DelayConsumerOptionsRules, resolveBatchConsumerOptions } from './consumer-options';
import { DashboardOptionsRules } from './dashboard-options';
import { resolveDelayQueueOptions } from './delay-queue-options';
import { resolveFixedQueueOptions } from './fixed-queue-options';

const unwarned = (warning: string) => {
  throw new Error(`unexpected warning: ${warning}`);
};
const fixed = (raw: unknown) => resolveFixedQueueOptions(raw, 'fixed queue "q"', unwarned);
const delay = (raw: unknown) => resolveDelayQueueOptions(raw, 'delay queue "q"', unwarned);
const batch = (raw: unknown) => resolveBatchConsumerOptions(raw, 'Unit.report', unwarned);
const refusal = (resolve: () => unknown): string => {
  try {
    resolve();
  } catch (error) {
    expect(error).toBeInstanceOf(QueueConfigError);
    return (error as Error).message;
  }
  throw new Error('the options were accepted');
};

describe('resolveOptions', () => {
  it('fills every option left out from the DEFAULTS objects, nested ones included', () => {
    const { retryDelayMs: _former, ...fixedDefaults } = FIXED_QUEUE_DEFAULTS;
    expect({ ...fixed({ name: 'q' }) }).toEqual({ name: 'q', ...fixedDefaults });
    const resolved = delay({ name: 'q', backoff: { type: 'fixed', delayMs: 5 } });
    expect(resolved.backoff).toEqual({
      type: 'fixed',
      delayMs: 5,
      maxDelayMs: DELAY_QUEUE_DEFAULTS.backoff.maxDelayMs,
    });
    expect({ ...resolved.deadLetter }).toEqual(DELAY_QUEUE_DEFAULTS.deadLetter);
    expect(resolved.leaseMs).toBe(DELAY_QUEUE_DEFAULTS.leaseMs);
    expect({ ...QueueSettings.resolve({ connection: 'redis://127.0.0.1' }) }).toEqual(MODULE_DEFAULTS);
    expect({ ...resolveOptions(DashboardOptionsRules, {}, 'dashboard') }).toEqual(DASHBOARD_DEFAULTS);
  });

  it('keeps what was given, an undefined value counting as left out', () => {
    expect(fixed({ name: 'q', capacity: 5000, batchSize: undefined })).toMatchObject({
      capacity: 5000,
      batchSize: FIXED_QUEUE_DEFAULTS.batchSize,
    });
  });

  it('names every broken rule at once, nested paths in full', () => {
    const message = refusal(() => delay({ name: 'bad name', shards: 0, backoff: { type: 'linear', delayMs: 1 } }));
    expect(message).toMatch(/^Invalid options for delay queue "q": /);
    expect(message).toContain('name must be 1-100 characters');
    expect(message).toContain('shards must be an integer between 1 and 16384 (got 0)');
    expect(message).toContain(
      'backoff.type must be one of the following values: fixed, exponential (got "linear", a string)',
    );
  });

  it('runs cross-field checks only once each field is valid', () => {
    expect(refusal(() => fixed({ name: 'q', capacity: 10, batchSize: 20 }))).toContain(
      'capacity must be ≥ batchSize (got capacity=10, batchSize=20)',
    );
    expect(refusal(() => fixed({ name: 'q', capacity: 0, batchSize: 20 }))).not.toContain('capacity must be ≥');
  });

  it('passes classes and callbacks through untouched', () => {
    const onFailed = () => undefined;
    class Schema {}
    const options = batch({ onFailed, cron: '* * * * * *' });
    expect(options.onFailed).toBe(onFailed);
    expect(options.maxAttempts).toBe(BATCH_CONSUMER_DEFAULTS.maxAttempts);
    expect(fixed({ name: 'q', schema: Schema }).schema).toBe(Schema);
    expect(refusal(() => fixed({ name: 'q', schema: 'Schema' }))).toContain('schema must be a class');
  });

  it('refuses what is not an object, saying what it got', () => {
    expect(refusal(() => fixed(null))).toBe('Invalid options for fixed queue "q": expected an object, got null');
    expect(refusal(() => fixed('q'))).toBe('Invalid options for fixed queue "q": expected an object, got string');
  });

  it('says an integer rule once, with its bounds and the value received', () => {
    expect(refusal(() => fixed({ name: 'q', batchSize: '50' }))).toBe(
      'Invalid options for fixed queue "q": batchSize must be an integer between 1 and 10000 (got "50", a string)',
    );
    expect(refusal(() => resolveOptions(DashboardOptionsRules, { hottestGroups: 'ten' }, 'dashboard'))).toBe(
      'Invalid options for dashboard: hottestGroups must be an integer between 1 and 1000 (got "ten", a string)',
    );
    expect(refusal(() => fixed({ name: 'q', maxWaitMs: 1.5 }))).toContain(
      'maxWaitMs must be an integer between 0 and 86400000 (got 1.5)',
    );
    expect(refusal(() => fixed({ name: 'q', maxAgeMs: -1 }))).toContain('maxAgeMs must be an integer ≥ 1 (got -1)');
    expect(refusal(() => delay({ name: 'q', backoff: { delayMs: null } }))).toContain(
      'backoff.delayMs must be an integer between 0 and 2147483647 (got null)',
    );
    expect(refusal(() => fixed({ name: 'a b' }))).toContain('name must be 1-100 characters');
    expect(refusal(() => fixed({ name: 'a b' }))).toContain('(got "a b", a string)');
  });

  it('refuses unknown keys, nested ones too, naming the option most likely meant', () => {
    expect(refusal(() => fixed({ name: 'q', maxWait: 500 }))).toBe(
      'Invalid options for fixed queue "q": maxWait is not an option (did you mean maxWaitMs?)',
    );
    expect(refusal(() => delay({ name: 'q', backoff: { type: 'fixed', dealyMs: 5 } }))).toBe(
      'Invalid options for delay queue "q": backoff.dealyMs is not an option (did you mean backoff.delayMs?)',
    );
    expect(refusal(() => fixed({ name: 'q', onFailed: () => undefined }))).toContain('onFailed is not an option');
    const unlike = refusal(() => fixed({ name: 'q', colour: 'red' }));
    expect(unlike).toMatch(/colour is not an option \(known: .*\)$/);
    for (const key of ['name', 'shards', 'capacity', 'batchSize', 'schema']) expect(unlike).toContain(key);
  });

  it('tracing: a boolean on the module and per queue; a consumer says how a task relates to its scheduling', () => {
    expect(QueueSettings.resolve({ connection: 'redis://127.0.0.1', tracing: true }).tracing).toBe(true);
    expect(fixed({ name: 'q', tracing: false }).tracing).toBe(false);
    expect(fixed({ name: 'q' }).tracing).toBeUndefined();
    expect(refusal(() => delay({ name: 'q', tracing: 'yes' }))).toMatch(/tracing.*boolean.*"yes"/);
    expect(resolveOptions(DelayConsumerOptionsRules, {}, 'c').scheduleContext).toBe('link');
    expect(refusal(() => resolveOptions(DelayConsumerOptionsRules, { scheduleContext: 'child' }, 'c'))).toMatch(
      /scheduleContext.*link.*parent.*"child"/,
    );
  });

  it("reads a DelayQueue's visibilityTimeoutMs as leaseMs, saying so, and refuses both with different values", () => {
    const renamed = jest.fn();
    const resolve = (raw: object) => resolveDelayQueueOptions({ name: 'q', ...raw }, 'delay queue "q"', renamed);
    expect(resolve({ leaseMs: 2000 }).leaseMs).toBe(2000);
    expect(renamed).not.toHaveBeenCalled();
    const old = resolve({ visibilityTimeoutMs: 1000 });
    expect(old.leaseMs).toBe(1000);
    expect(old).not.toHaveProperty('visibilityTimeoutMs');
    expect(renamed).toHaveBeenCalledTimes(1);
    expect(resolve({ visibilityTimeoutMs: 1000, leaseMs: 1000 }).leaseMs).toBe(1000);
    expect(refusal(() => resolve({ visibilityTimeoutMs: 1000, leaseMs: 2000 }))).toBe(
      'Invalid options for delay queue "q": leaseMs and visibilityTimeoutMs are two names of the lease, ' +
        'given different values (got leaseMs=2000, visibilityTimeoutMs=1000): give leaseMs alone',
    );
    expect(renamed).toHaveBeenLastCalledWith(
      'delay queue "q": visibilityTimeoutMs is deprecated, use leaseMs, the lease\'s name on both queues ' +
        '(it is read as leaseMs meanwhile)',
    );
    expect(refusal(() => resolve({ visibilityTimeoutMs: 50 }))).toBe(
      'Invalid options for delay queue "q": visibilityTimeoutMs must be an integer between 100 and 86400000 (got 50)',
    );
  });

  it('says which value of a cross-field rule is a default', () => {
    expect(refusal(() => fixed({ name: 'q', capacity: 100 }))).toBe(
      'Invalid options for fixed queue "q": capacity must be ≥ batchSize (got capacity=100, batchSize=128 by default)',
    );
  });
});
