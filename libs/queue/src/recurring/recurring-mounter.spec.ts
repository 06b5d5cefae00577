import { RepeatSchedule } from '../delay-queue/repeat-schedule';
import { QueueConfigError } from '../errors';
import { RecurringDeclaration } from './recurring-declaration';
import { RecurringMounter, type RecurringEntry } from './recurring-mounter';

/** The mounter over fakes: its declarations' calls to Redis are spied on, not sent. */
function mounter() {
  const made: unknown[] = [];
  const consumed: { label: string; handler: (payload: unknown, ctx: unknown) => unknown }[] = [];
  const queues = {
    delayQueue: (options: unknown) => (
      made.push(options),
      { store: {}, hints: {}, record: { assert: async () => {} } }
    ),
  };
  const connection = { scripts: { add: () => undefined }, clock: {}, client: { on: () => {}, off: () => {} } };
  const consumers = {
    delayQueueConsumer: (_queue: unknown, label: string, _options: unknown, handler: never) => (
      consumed.push({ label, handler }),
      { label }
    ),
  };
  const schedules = new RecurringMounter(
    queues as never,
    connection as never,
    { prefix: 'p' } as never,
    {} as never,
    consumers as never,
  );
  return { schedules, made, consumed };
}

const entry = (name: string, label: string, run: RecurringEntry['run'] = () => undefined): RecurringEntry => ({
  name,
  label,
  schedule: new RepeatSchedule({ everyMs: 1000 }),
  maxAttempts: 2,
  run,
});

describe('RecurringMounter', () => {
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

  it('refuses a name another schedule took, before making its queue', () => {
    const { schedules, made } = mounter();
    schedules.mount(entry('digest', 'Jobs.digest'));
    expect(() => schedules.mount(entry('digest', 'Other.digest'))).toThrow(QueueConfigError);
    expect(() => schedules.mount(entry('digest', 'Other.digest'))).toThrow(
      '@Recurring on Other.digest: the name "digest" is already used by @Recurring on Jobs.digest',
    );
    expect(made).toEqual([{ name: 'recurring.digest', shards: 1, leaseMs: 2000, maxAttempts: 2 }]);
    expect([...schedules.mounted().keys()]).toEqual(['digest']);
  });

  it("runs an entry's run for each occurrence its queue's consumer is handed, with the tick's context", async () => {
    const runs: unknown[] = [];
    const { schedules, consumed } = mounter();
    schedules.mount(entry('digest', 'Jobs.digest', (ctx) => runs.push(ctx)));
    const signal = new AbortController().signal;
    await consumed[0].handler(null, {
      repeat: { id: 'digest', occurrence: 60_000 },
      runAt: 60_000,
      firedAt: 60_010,
      attempt: 1,
      signal,
    });
    expect(consumed[0].label).toBe('Jobs.digest');
    expect(runs).toEqual([{ name: 'digest', occurrence: 60_000, firedAt: 60_010, attempt: 1, signal }]);
  });

  it('declares nothing more once withdrawn at shutdown, and withdraws only what it declared', async () => {
    const { schedules } = mounter();
    schedules.mount(entry('a', 'Jobs.a'));
    await schedules.start();
    schedules.mount(entry('b', 'Jobs.b'));
    await schedules.withdraw();
    expect(withdraw).toHaveBeenCalledTimes(1);
    declare.mockClear();
    await schedules.redeclare();
    expect(declare).not.toHaveBeenCalled();
  });
});
