import 'reflect-metadata';
import { QueueConfigError } from '../errors';
import {
  BATCH_CONSUMER_DEFAULTS,
  DASHBOARD_DEFAULTS,
  DELAY_QUEUE_DEFAULTS,
  FIXED_QUEUE_DEFAULTS,
  MODULE_DEFAULTS,
  QUEUE_BASE_DEFAULTS,
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

const HOUR = 3_600_000;

/** Resolves with a warning recorder, so a test sees each warning once it was given. */
function withWarnings<T>(resolve: (raw: object, label: string, warn: (message: string) => void) => T) {
  const warnings: string[] = [];
  return { warnings, resolve: (raw: object) => resolve(raw, 'here', (message) => warnings.push(message)) };
}

describe('the retry words: maxAttempts and backoff everywhere', () => {
  describe('FixedQueue', () => {
    const fixed = withWarnings(resolveFixedQueueOptions);
    beforeEach(() => fixed.warnings.splice(0));

    it('takes backoff, with the default of every queue, and warns of nothing', () => {
      expect({ ...fixed.resolve({ name: 'q' }).backoff }).toEqual(QUEUE_BASE_DEFAULTS.backoff);
      const given = fixed.resolve({ name: 'q', maxAttempts: 3, backoff: { type: 'fixed', delayMs: 250 } });
      expect(given.maxAttempts).toBe(3);
      expect({ ...given.backoff }).toEqual({ type: 'fixed', delayMs: 250, maxDelayMs: HOUR });
      expect(fixed.warnings).toEqual([]);
    });

    it('reads retryDelayMs as the backoff it always was (doubled, an hour at most), warning once', () => {
      const options = fixed.resolve({ name: 'q', retryDelayMs: 500 });
      expect({ ...options.backoff }).toEqual({ type: 'exponential', delayMs: 500, maxDelayMs: HOUR });
      expect(options).not.toHaveProperty('retryDelayMs');
      expect(fixed.warnings).toEqual([
        "here: retryDelayMs is deprecated, use backoff: { type: 'exponential', delayMs: 500, maxDelayMs: 3600000 }, " +
          "the retry's words everywhere (it is read as backoff meanwhile)",
      ]);
      // Beyond an hour it waited an hour each time: it still does.
      expect(fixed.resolve({ name: 'q', retryDelayMs: 2 * HOUR }).backoff).toEqual({
        type: 'exponential',
        delayMs: HOUR,
        maxDelayMs: HOUR,
      });
    });

    it('refuses a bad value under either name, naming it, and the two names disagreeing', () => {
      expect(refusal(() => fixed.resolve({ name: 'q', retryDelayMs: -1 }))).toBe(
        'Invalid options for here: retryDelayMs must be an integer between 0 and 86400000 (got -1)',
      );
      expect(refusal(() => fixed.resolve({ name: 'q', backoff: { type: 'fixed', delayMs: -1 } }))).toBe(
        'Invalid options for here: backoff.delayMs must be an integer between 0 and 2147483647 (got -1)',
      );
      expect(
        refusal(() => fixed.resolve({ name: 'q', retryDelayMs: 500, backoff: { type: 'fixed', delayMs: 500 } })),
      ).toBe(
        'Invalid options for here: backoff and retryDelayMs are two names of the wait between attempts, given ' +
          "different values (got backoff={ type: 'fixed', delayMs: 500, maxDelayMs: 3600000 }, retryDelayMs=500): " +
          'give backoff alone',
      );
      const same = fixed.resolve({ name: 'q', retryDelayMs: 500, backoff: { type: 'exponential', delayMs: 500 } });
      expect(same.backoff.delayMs).toBe(500);
      expect(fixed.warnings).toHaveLength(1);
    });
  });

  describe('@BatchConsumer', () => {
    const batch = withWarnings(resolveBatchConsumerOptions);
    beforeEach(() => batch.warnings.splice(0));

    it('takes maxAttempts and backoff, one attempt and 100 ms by default, and warns of nothing', () => {
      const defaults = batch.resolve({});
      expect(defaults.maxAttempts).toBe(1);
      expect({ ...defaults.backoff }).toEqual(BATCH_CONSUMER_DEFAULTS.backoff);
      expect({ ...BATCH_CONSUMER_DEFAULTS.backoff }).toEqual({ type: 'exponential', delayMs: 100, maxDelayMs: HOUR });
      const given = batch.resolve({ maxAttempts: 3, backoff: { type: 'fixed', delayMs: 10 } });
      expect([given.maxAttempts, given.backoff.type, given.backoff.delayMs]).toEqual([3, 'fixed', 10]);
      expect(batch.warnings).toEqual([]);
    });

    it('reads retries as maxAttempts - 1 and retryDelayMs as backoff, warning once for each', () => {
      const options = batch.resolve({ retries: 2, retryDelayMs: 10 });
      expect(options.maxAttempts).toBe(3);
      expect({ ...options.backoff }).toEqual({ type: 'exponential', delayMs: 10, maxDelayMs: HOUR });
      expect(options).not.toHaveProperty('retries');
      expect(options).not.toHaveProperty('retryDelayMs');
      expect(batch.warnings).toEqual([
        "here: retries is deprecated, use maxAttempts: 3, the retry's words everywhere (it is read as maxAttempts meanwhile)",
        "here: retryDelayMs is deprecated, use backoff: { type: 'exponential', delayMs: 10, maxDelayMs: 3600000 }, " +
          "the retry's words everywhere (it is read as backoff meanwhile)",
      ]);
    });

    it('refuses a bad value under either name, naming it, and the two names disagreeing', () => {
      expect(refusal(() => batch.resolve({ retries: -1 }))).toBe(
        'Invalid options for here: retries must be an integer between 0 and 999 (got -1)',
      );
      expect(refusal(() => batch.resolve({ maxAttempts: 0 }))).toBe(
        'Invalid options for here: maxAttempts must be an integer between 1 and 1000 (got 0)',
      );
      expect(refusal(() => batch.resolve({ retryDelayMs: 'soon' }))).toContain('retryDelayMs must be an integer');
      expect(refusal(() => batch.resolve({ backoff: { type: 'linear', delayMs: 1 } }))).toContain(
        'backoff.type must be one of the following values: fixed, exponential',
      );
      expect(refusal(() => batch.resolve({ retries: 2, maxAttempts: 2 }))).toBe(
        'Invalid options for here: maxAttempts and retries are two names of the attempts (maxAttempts = retries + 1), ' +
          'given different values (got maxAttempts=2, retries=2): give maxAttempts alone',
      );
      expect(batch.resolve({ retries: 2, maxAttempts: 3 }).maxAttempts).toBe(3);
    });
  });

  it('gives the options both queues take the same bounds on both', () => {
    const none = () => undefined;
    const kinds = [
      (raw: object) => resolveFixedQueueOptions({ name: 'q', ...raw }, 'q', none),
      (raw: object) => resolveDelayQueueOptions({ name: 'q', ...raw }, 'q', none),
    ];
    for (const resolve of kinds) {
      expect(resolve({ leaseMs: 86_400_000 }).leaseMs).toBe(86_400_000);
      expect(refusal(() => resolve({ leaseMs: 86_400_001 }))).toContain(
        'leaseMs must be an integer between 100 and 86400000 (got 86400001)',
      );
      expect(refusal(() => resolve({ maxAttempts: 1001 }))).toContain(
        'maxAttempts must be an integer between 1 and 1000',
      );
      expect(refusal(() => resolve({ backoff: { type: 'fixed', delayMs: 2 ** 31 } }))).toContain(
        'backoff.delayMs must be an integer between 0 and 2147483647',
      );
      expect(refusal(() => resolve({ deadLetter: { capacity: -1 } }))).toContain('deadLetter.capacity');
      expect(refusal(() => resolve({ shards: 16_385 }))).toContain('shards must be an integer between 1 and 16384');
    }
  });
});
