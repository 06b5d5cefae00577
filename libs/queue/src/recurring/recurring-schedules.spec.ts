import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueConfigError } from '../errors';
import { RecurringDeclaration } from './recurring-declaration';
import { RecurringSchedules } from './recurring-schedules';

/** The registry over fakes: its declarations' calls to Redis are spied on, not sent. */
function registry() {
  const made: unknown[] = [];
  const queues = { delayQueue: (options: unknown) => (made.push(options), { store: {}, hints: {} }) };
  const connection = { scripts: { add: () => undefined }, clock: {} };
  const schedules = new RecurringSchedules(queues as never, connection as never, { prefix: 'p' } as never, {} as never);
  return { schedules, made };
}

const plan = (name: string) => ({ name, schedule: new RepeatSchedule({ everyMs: 1000 }), maxAttempts: 2 });

describe('RecurringSchedules', () => {
  let declare: jest.SpyInstance;
  let withdraw: jest.SpyInstance;
  beforeEach(() => {
    declare = jest.spyOn(RecurringDeclaration.prototype, 'declare').mockImplementation(async function (this: {
      landed: boolean;
    }) {
      this.landed = true;
    });
    withdraw = jest.spyOn(RecurringDeclaration.prototype, 'withdraw').mockResolvedValue();
  });
  afterEach(() => jest.restoreAllMocks());

  it('refuses a name another method took, before making its queue', () => {
    const { schedules, made } = registry();
    schedules.add(plan('digest'), 'Jobs.digest');
    expect(() => schedules.add(plan('digest'), 'Other.digest')).toThrow(QueueConfigError);
    expect(() => schedules.add(plan('digest'), 'Other.digest')).toThrow(
      '@Recurring on Other.digest: the name "digest" is already used by @Recurring on Jobs.digest',
    );
    expect(made).toEqual([{ name: 'recurring.digest', shards: 1, leaseMs: 2000, maxAttempts: 2 }]);
    expect([...schedules.declared().keys()]).toEqual(['digest']);
  });

  it('declares nothing more once withdrawn at shutdown, and withdraws only what it declared', async () => {
    const { schedules } = registry();
    schedules.add(plan('a'), 'Jobs.a');
    await schedules.declareAll();
    schedules.add(plan('b'), 'Jobs.b');
    await schedules.withdraw();
    expect(withdraw).toHaveBeenCalledTimes(1);
    declare.mockClear();
    await schedules.redeclare();
    expect(declare).not.toHaveBeenCalled();
  });
});
