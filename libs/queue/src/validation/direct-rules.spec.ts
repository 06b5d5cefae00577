import 'reflect-metadata';
import { validateSync } from 'class-validator';
import fc from 'fast-check';
import { CALL_OPTIONS } from './call-options';
import { directRules } from './direct-rules';
import { optionKeys } from './option-violations';
import { BatchConsumerOptionsRules, DelayConsumerOptionsRules } from './consumer-options';
import { DashboardOptionsRules } from './dashboard-options';
import { DelayQueueOptionsRules } from './delay-queue-options';
import { FixedQueueOptionsRules } from './fixed-queue-options';
import { ModuleOptionsRules } from './module-options';

const FLAT: (new () => object)[] = [
  ...Object.values(CALL_OPTIONS).map(({ rules }) => rules),
  ModuleOptionsRules,
  DashboardOptionsRules,
  DelayConsumerOptionsRules,
];

/** Values at every rule's edges: kinds, bounds, enumerations, and what `Given` and `IsOptional` tell apart. */
const SAMPLES: unknown[] = [
  ...[undefined, null, true, false, 'false', '', 'x', 'link', 'parent', 'fail', 'continue', 'warn', 'queues'],
  ...[0, 1, 9, 10, 16, 99, 100, 1000, 1001, 10_000, 60_000, 600_001, -1, 1.5, NaN, Infinity, 2 ** 31],
  ...[new Date(0), ['a'], [1], {}, { maxBacklog: 1 }, () => undefined],
];

const VALIDATION = { forbidUnknownValues: false, whitelist: true, forbidNonWhitelisted: true };

describe('directRules', () => {
  it.each(FLAT.map((rules) => [rules.name, rules] as const))(
    '%s: accepts exactly what class-validator accepts',
    (_name, rules) => {
      const run = directRules(rules)!;
      expect(run).toBeDefined();
      const agree = (raw: Record<string, unknown>) => {
        const options = Object.assign(new rules(), raw) as Record<string, unknown>;
        expect({ raw, accepted: run(options) }).toEqual({
          raw,
          accepted: validateSync(options, VALIDATION).length === 0,
        });
      };
      const keys = [...optionKeys(rules), 'unknown'];
      // Every key alone with every sample, then samples together.
      for (const key of keys) for (const sample of SAMPLES) agree({ [key]: sample });
      fc.assert(
        fc.property(fc.dictionary(fc.constantFrom(...keys), fc.constantFrom(...SAMPLES), { maxKeys: 4 }), agree),
      );
    },
  );

  it('leaves options with nested rules to class-validator', () => {
    expect(directRules(FixedQueueOptionsRules)).toBeUndefined();
    expect(directRules(DelayQueueOptionsRules)).toBeUndefined();
    expect(directRules(BatchConsumerOptionsRules)).toBeUndefined();
  });
});
