import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import type { RepeatInfo } from '../interfaces';
import { decodeDeclarations } from './recurring.store';

const everySecond = new RepeatSchedule({ everyMs: 1000 }).text;
const everyMinute = new RepeatSchedule({ everyMs: 60_000 }, { missed: 'skip' }).text;
const inEffect: RepeatInfo = { id: 'digest', everyMs: 60_000, missed: 'skip', nextRunAt: 0 };

describe('decodeDeclarations', () => {
  it('lists the definition in effect first, then newest first, live while a declarer renews it', () => {
    const fields = {
      // '<alive until>|<schedule>': one declarer of each definition, one of them gone at 5000.
      'p:a:1:x': `9000|${everySecond}`,
      'p:b:2:y': `4000|${everyMinute}`,
      // '<first declared at>|<last declared at>|<declared by>', which may itself hold '|'.
      [`d:${everySecond}`]: '3000|3500|Jobs.digest on a|b pid 1',
      [`d:${everyMinute}`]: '1000|3900|Jobs.digest on b pid 2',
    };
    expect(decodeDeclarations(fields, inEffect, 5000)).toEqual([
      {
        everyMs: 60_000,
        missed: 'skip',
        declaredBy: 'Jobs.digest on b pid 2',
        firstDeclaredAt: 1000,
        live: false,
        inEffect: true,
      },
      {
        everyMs: 1000,
        missed: 'latest',
        declaredBy: 'Jobs.digest on a|b pid 1',
        firstDeclaredAt: 3000,
        live: true,
        inEffect: false,
      },
    ]);
  });

  it('has nothing to list for a schedule no process declared', () => {
    expect(decodeDeclarations({}, inEffect, 5000)).toEqual([]);
  });
});
