import 'reflect-metadata';
import { QueueConfigError } from '../errors';
import { BATCH_CONSUMER_DEFAULTS, QUEUE_BASE_DEFAULTS } from '../queue.defaults';
import { resolveBatchConsumerOptions } from './consumer-options';
import { resolveDelayQueueOptions } from './delay-queue-options';
import { resolveFixedQueueOptions } from './fixed-queue-options';

const HOUR = 3_600_000;

/** Resolves with a warning recorder, so a test sees each warning once it was given. */
function withWarnings<T>(resolve: (raw: object, label: string, warn: (message: string) => void) => T) {
  const warnings: string[] = [];
  return { warnings, resolve: (raw: object) => resolve(raw, 'here', (message) => warnings.push(message)) };
}

const refusal = (resolve: () => unknown): string => {
  try {
    resolve();
  } catch (error) {
    expect(error).toBeInstanceOf(QueueConfigError);
    return (error as Error).message;
  }
  throw new Error('the options were accepted');
};

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
