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
import {
  BatchConsumerOptionsRules,
  batchConsumerChecks,
  DashboardOptionsRules,
  DelayQueueOptionsRules,
  delayQueueChecks,
  FixedQueueOptionsRules,
  fixedQueueChecks,
  resolveOptions,
} from './queue-options';

const fixed = (raw: unknown) => resolveOptions(FixedQueueOptionsRules, raw, 'fixed queue "q"', fixedQueueChecks);
const delay = (raw: unknown) => resolveOptions(DelayQueueOptionsRules, raw, 'delay queue "q"', delayQueueChecks);
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
    expect({ ...fixed({ name: 'q' }) }).toEqual({ name: 'q', ...FIXED_QUEUE_DEFAULTS });
    const resolved = delay({ name: 'q', backoff: { type: 'fixed', delayMs: 5 } });
    expect(resolved.backoff).toEqual({
      type: 'fixed',
      delayMs: 5,
      maxDelayMs: DELAY_QUEUE_DEFAULTS.backoff.maxDelayMs,
    });
    expect({ ...resolved.deadLetter }).toEqual(DELAY_QUEUE_DEFAULTS.deadLetter);
    expect(resolved.visibilityTimeoutMs).toBe(DELAY_QUEUE_DEFAULTS.visibilityTimeoutMs);
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
    expect(message).toContain('shards must not be less than 1');
    expect(message).toContain('backoff.type must be one of the following values: fixed, exponential');
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
    const options = resolveOptions(
      BatchConsumerOptionsRules,
      { onFailed, cron: '* * * * * *' },
      'consumer',
      batchConsumerChecks,
    );
    expect(options.onFailed).toBe(onFailed);
    expect(options.retries).toBe(BATCH_CONSUMER_DEFAULTS.retries);
    expect(fixed({ name: 'q', schema: Schema }).schema).toBe(Schema);
    expect(refusal(() => fixed({ name: 'q', schema: 'Schema' }))).toContain('schema must be a class');
  });

  it('refuses what is not an object, saying what it got', () => {
    expect(refusal(() => fixed(null))).toBe('Invalid options for fixed queue "q": expected an object, got null');
    expect(refusal(() => fixed('q'))).toBe('Invalid options for fixed queue "q": expected an object, got string');
  });

  it('says a rule shared by several constraints once, with the value received', () => {
    expect(refusal(() => resolveOptions(DashboardOptionsRules, { hottestGroups: 'ten' }, 'dashboard'))).toBe(
      'Invalid options for dashboard: hottestGroups must be an integer from 1 to 1000 (got ten)',
    );
  });
});
