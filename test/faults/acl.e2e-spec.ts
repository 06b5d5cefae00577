import IORedis from 'ioredis';
import { scriptLibrary } from '../../libs/queue/src/queue-scripts';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { pollUntil } from '@test/support/testing';
import { CapturedLogs, startRedis, type RedisServer } from '@test/support/faults';

/** What the README tells an operator to grant, besides the keys `~<prefix>:*` and channels `&<prefix>:*`. */
const CLIENT_COMMANDS = [
  'evalsha',
  'eval',
  'multi',
  'exec',
  'lrange',
  'llen',
  'publish',
  'subscribe',
  'ping',
  'info',
  'quit',
  'unlink',
  'zscan',
  'hscan',
];
const SCRIPT_COMMANDS = [
  'time',
  'rpush',
  'ltrim',
  'lrange',
  'lindex',
  'llen',
  'persist',
  'zadd',
  'zrem',
  'zscore',
  'zrange',
  'zcard',
  'zcount',
  'zpopmin',
  'hget',
  'hset',
  'hdel',
  'hexists',
  'hincrby',
  'hgetall',
  'hmget',
  'hrandfield',
  'hlen',
  'exists',
  'pexpire',
  'unlink',
  'hscan',
];

const eventLog = recordBatches<string>('events', { concurrency: 2 });
const taskLog = recordTasks<{ fail?: boolean }>('tasks', { concurrency: 4 }, (payload) => {
  if (payload.fail) throw new Error('failing on purpose');
});

describe('a Redis ACL user restricted to its prefix', () => {
  const harness = useQueueApps();
  let server: RedisServer;
  let admin: IORedis;

  beforeAll(async () => {
    server = await startRedis();
    admin = new IORedis(server.url);
  });
  afterEach(async () => {
    await admin.acl('LOG', 'RESET');
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });

  async function user(name: string, rules: string[]) {
    await admin.acl('SETUSER', name, 'reset', 'on', '>pw-of-' + name, ...rules);
    return `redis://${name}:pw-of-${name}@127.0.0.1:${server.port}`;
  }

  async function boot(url: string, prefix: string, logs = new CapturedLogs()) {
    const app = await harness.start({
      connection: url,
      prefix,
      root: { idlePollMs: 200 },
      fixed: [{ name: 'events', shards: 2, batchSize: 4, maxWaitMs: 20 }],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 } }],
      providers: [eventLog.consumer, taskLog.consumer],
      logger: logs,
    });
    return { events: app.fixed<string>('events'), tasks: app.delay('tasks') };
  }

  it('grants, in the documented list, every command the scripts call', () => {
    const called = new Set<string>();
    const library = scriptLibrary();
    for (const script of library.names()) {
      for (const [, command] of library.text(script).matchAll(/redis\.call\('([A-Za-z]+)'/g))
        called.add(command.toLowerCase());
    }
    expect([...called].filter((command) => !SCRIPT_COMMANDS.includes(command))).toEqual([]);
  });

  it('works with only the documented commands, keys and channels, and Redis denies it nothing', async () => {
    const url = await user('queues', [
      '~acl:*',
      '&acl:*',
      ...[...CLIENT_COMMANDS, ...SCRIPT_COMMANDS].map((c) => `+${c}`),
    ]);
    const { events, tasks } = await boot(url, 'acl');
    await events.pushMany('g', ['a', 'b', 'c', 'd', 'e']);
    expect(await events.size('g')).toBeGreaterThanOrEqual(0);
    expect((await events.groups()).items.length).toBeLessThanOrEqual(1);
    expect(await events.pauseGroup('held')).toBe(true);
    expect((await events.pausedGroups()).items.map(({ group }) => group)).toEqual(['held']);
    expect(await events.resumeGroup('held')).toBe(true);
    await tasks.schedule({}, { id: 'ok' });
    await tasks.schedule({ fail: true }, { id: 'doomed' });
    await tasks.schedule({}, { id: 'moved', delayMs: 60_000 });
    await tasks.shift('moved', -1000);
    await tasks.reschedule('moved', { delayMs: 60_000 });
    await pollUntil(
      () => eventLog.messages().length === 5 && taskLog.tasks.some((t) => t.id === 'ok' && t.ctx.attempt === 1),
      'consumers',
    );
    await pollUntil(async () => (await tasks.deadLetters()).length === 1, 'the failing task to die');
    expect(await tasks.requeue('doomed', { delayMs: 60_000 })).not.toBeNull();
    expect(await tasks.get('doomed')).toMatchObject({ state: 'scheduled' });
    expect(await tasks.cancel('moved')).toBe(true);
    expect(await events.stats()).toMatchObject({ delivered: 5 });
    expect((await tasks.stats()).completed).toBe(1);
    await events.pushMany('cleared', ['a']);
    expect(await events.clear('cleared')).toEqual({ dropped: 1 });
    await tasks.obliterate({ force: true });
    await events.obliterate({ force: true });
    // What is left is the running process' announcement (QueueProcesses), which it deletes as it closes.
    expect(await admin.keys('acl:*')).toEqual(['acl:{processes}:announced']);
    const denied = (await admin.acl('LOG')) as unknown[][];
    // CLIENT SETINFO is sent by ioredis on connect and its refusal ignored: the only denial allowed.
    const commands = denied.map((entry) => String(entry[entry.indexOf('object') + 1]));
    expect(commands.filter((command) => command !== 'client|setinfo')).toEqual([]);
  });

  it('refuses to start, naming what is missing, when the user may not run scripts', async () => {
    const url = await user('no-scripts', ['~acl:*', '&acl:*', '+ping', '+info', '+quit']);
    const logs = new CapturedLogs();
    await expect(boot(url, 'acl', logs)).rejects.toThrow(/Redis refused .*NOPERM.*evalsha.*needs/i);
  });

  it('refuses to start, naming the key pattern, when the user may not touch the keys', async () => {
    const url = await user('other-keys', [
      '~elsewhere:*',
      '&acl:*',
      ...[...CLIENT_COMMANDS, ...SCRIPT_COMMANDS].map((c) => `+${c}`),
    ]);
    await expect(boot(url, 'acl')).rejects.toThrow(/NOPERM.*~acl:\*/);
  });

  it('refuses to start, naming the channel pattern, when the user may not subscribe', async () => {
    const url = await user('no-channels', ['~acl:*', ...[...CLIENT_COMMANDS, ...SCRIPT_COMMANDS].map((c) => `+${c}`)]);
    await expect(boot(url, 'acl')).rejects.toThrow(/SUBSCRIBE.*NOPERM.*&acl:\*/);
  });

  it('refuses a wrong password with a clear start-up error', async () => {
    await user('queues', ['~acl:*', '&acl:*', '+@all']);
    const url = `redis://queues:wrong@127.0.0.1:${server.port}`;
    const error = await boot(url, 'acl').then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/Redis at redis:\/\/queues:\*\*\*@\S+ refused the connection \(WRONGPASS/);
    expect(error?.message).not.toContain('wrong@');
  });
});
