import { type DelayQueue, type FixedQueue, QueueInputError } from 'nestjs-redis-queues';
import { useQueueApps } from '@test/support/fixtures';
import { keysMatching } from '@test/support/testing';

describe('per-call options', () => {
  const harness = useQueueApps();
  let prefix: string;
  let events: FixedQueue;
  let reminders: DelayQueue;

  beforeEach(async () => {
    const started = await harness.start({
      root: { consumers: false },
      fixed: [{ name: 'events', shards: 2 }],
      delay: [{ name: 'reminders', shards: 2 }],
    });
    ({ prefix } = started);
    events = started.fixed('events');
    reminders = started.delay('reminders');
  });

  /** Every call in `calls` must reject (not throw) with a QueueInputError matching its text, writing nothing. */
  async function refusedWithoutWrites(calls: [() => Promise<unknown>, RegExp][]): Promise<void> {
    await harness.redis.ping();
    const before = await keysMatching(harness.redis, `${prefix}:*`);
    for (const [call, text] of calls) {
      let pending!: Promise<unknown>;
      expect(() => (pending = call())).not.toThrow();
      await expect(pending).rejects.toThrow(QueueInputError);
      await expect(pending).rejects.toThrow(text);
    }
    expect(await keysMatching(harness.redis, `${prefix}:*`)).toEqual(before);
  }

  it('refuses a misspelt schedule option, naming the one meant, instead of scheduling the task due now', async () => {
    await refusedWithoutWrites([
      [
        () => reminders.schedule({ n: 1 }, { id: 't', delay: 5000 } as never),
        /^schedule\(payload, options\): delay is not an option \(did you mean delayMs\?\)$/,
      ],
      [
        () => reminders.schedule({ n: 1 }, { id: 't', runat: Date.now() } as never),
        /runat is not an option \(did you mean runAt\?\)/,
      ],
      [() => reminders.schedule({ n: 1 }, { id: 't', replaces: false } as never), /did you mean replace\?/],
    ]);
    expect(await reminders.get('t')).toBeNull();
  });

  it('refuses schedule options of the wrong type, and a non-object', async () => {
    await refusedWithoutWrites([
      [
        () => reminders.schedule({ n: 1 }, { id: 't', replace: 'false' } as never),
        /replace must be true or false \(got "false", a string\)/,
      ],
      [
        () => reminders.schedule({ n: 1 }, { id: 't', runAt: { at: 1 } } as never),
        /runAt must be a Date, epoch milliseconds or an ISO 8601 string \(got an object\)/,
      ],
      [() => reminders.schedule({ n: 1 }, { id: 't', delayMs: '5000' } as never), /delayMs must be a number/],
      [
        () => reminders.schedule({ n: 1 }, null as never),
        /expected an options object \{ id\?, onExists\?, replace\?, debounce\?, retryMs\?, idempotencyKey\?, delayMs\?, runAt\? \}, got null/,
      ],
      [() => reminders.schedule({ n: 1 }, 't' as never), /expected an options object/],
      // Undefined is a key left out; null is a value, and not an id.
      [() => reminders.schedule({ n: 1 }, { id: null } as never), /id must be a string \(got null\)/],
    ]);
  });

  it('refuses misspelt times of reschedule and requeue, leaving the task where it was', async () => {
    const { runAt } = await reminders.schedule({ n: 1 }, { id: 't', delayMs: 3_600_000 });
    await refusedWithoutWrites([
      [
        () => reminders.reschedule('t', { delay: 5000 } as never),
        /^reschedule\(id, time\): delay is not an option \(did you mean delayMs\?\)$/,
      ],
      [() => reminders.reschedule('t', { runAt: true } as never), /runAt must be a Date/],
      [
        () => reminders.requeue('t', { runat: 0 } as never),
        /^requeue\(id, time\): runat is not an option \(did you mean runAt\?\)$/,
      ],
    ]);
    expect(await reminders.get('t')).toMatchObject({ state: 'scheduled', runAt });
  });

  it('refuses misspelt paging, obliterate and deleteDead options', async () => {
    await events.push('g', { n: 1 });
    await reminders.schedule({ n: 1 }, { id: 't' });
    await refusedWithoutWrites([
      [
        () => reminders.list('scheduled', { limt: 5 } as never),
        /^list\(state, page\): limt is not an option \(did you mean limit\?\)$/,
      ],
      [
        () => reminders.deadLetters({ cursr: 'x' } as never),
        /^deadLetters\(page\): cursr is not an option \(did you mean cursor\?\)$/,
      ],
      [() => events.deadLetters({ limits: 5 } as never), /did you mean limit\?/],
      [
        () => events.groups({ limit: '5' } as never),
        /^groups\(page\): limit must be an integer between 1 and 1000 \(got "5", a string\)$/,
      ],
      [() => events.groups(null as never), /groups\(page\): expected an options object/],
      [() => reminders.list('dead', { cursor: 5 } as never), /cursor must be a string \(got 5\)/],
      [() => reminders.deleteDead({ olderThanMs: 1000 } as never), /did you mean olderThan\?/],
      [() => events.obliterate({ forse: true } as never), /forse is not an option \(did you mean force\?\)/],
      [() => reminders.obliterate({ Force: true } as never), /did you mean force\?/],
    ]);
  });

  it('refuses values out of range in the same words, whichever call takes them', async () => {
    await refusedWithoutWrites([
      [() => events.groups({ limit: 0 }), /^groups\(page\): limit must be an integer between 1 and 1000 \(got 0\)$/],
      [() => reminders.list('scheduled', { limit: 1001 }), /^list\(state, page\): limit must be an integer between 1/],
      [
        () => reminders.deleteDead({ olderThan: -1 }),
        /^deleteDead\(options\): olderThan must be an integer ≥ 0 \(got -1\)$/,
      ],
      [
        () => reminders.schedule({ n: 1 }, { id: '' }),
        /^schedule\(payload, options\): id must not be empty \(got "", a string\)$/,
      ],
    ]);
  });

  it('names every known key when nothing is near enough to be a typo', async () => {
    await refusedWithoutWrites([
      [
        () => reminders.schedule({ n: 1 }, { id: 't', priority: 1 } as never),
        /priority is not an option \(known: id, onExists, replace, debounce, retryMs, idempotencyKey, delayMs, runAt\)/,
      ],
      // A key JSON.parse makes, which an assignment would take for the prototype.
      [
        () => reminders.schedule({ n: 1 }, JSON.parse('{ "id": "t", "__proto__": { "delayMs": 5000 } }')),
        /^schedule\(payload, options\): __proto__ is not an option \(known: id, onExists, replace, debounce, retryMs, idempotencyKey, delayMs, runAt\)$/,
      ],
    ]);
  });

  it('still takes every documented option', async () => {
    const runAt = Date.now() + 60_000;
    expect(await reminders.schedule({ n: 1 }, { id: 't', runAt, replace: false, delayMs: undefined })).toEqual({
      id: 't',
      runAt,
      changed: true,
    });
    expect(await reminders.schedule({ n: 2 }, { id: 't', runAt, onExists: 'keep', replace: false })).toMatchObject({
      changed: false,
    });
    const debounce = { maxWaitMs: 60_000 };
    expect(await reminders.schedule({ n: 3 }, { id: 't', delayMs: 0, onExists: 'replace', debounce })).toMatchObject({
      changed: true,
    });
    expect(await reminders.reschedule('t', { delayMs: 120_000 })).toMatchObject({ id: 't' });
    expect((await reminders.list('scheduled', { limit: 5, cursor: undefined })).items).toHaveLength(1);
    expect(await reminders.deleteDead({ olderThan: 0 })).toBe(0);
    expect(await events.groups({ limit: 5 })).toEqual({ items: [], cursor: null });
    await events.obliterate({ force: false });
  });
});
