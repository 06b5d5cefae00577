import { QueueKeys } from '../../redis/keys';
import { decodeRepeatEntry } from './repeat-entry';
import { shardKeys } from '../../redis/script-protocol';
import { delayClaim } from './delay-claim';
import { delayDead } from './delay-dead';
import { delayMove } from './delay-move';
import { delaySchedule, type ScheduleItem } from './delay-schedule';

const shard = shardKeys(new QueueKeys('p', 'd', 4), 3);

describe('delay-claim protocol', () => {
  const input = { limit: 10, leaseMs: 30_000, maxAttempts: 5, deadCapacity: 100, token: 'tok' };

  it('declares the shard keys in the order of the script, and its arguments', () => {
    expect(delayClaim.keys(shard, input)).toEqual(
      ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'repeats', 'successors'].map(
        (kind) => `p:{d:3}:${kind}`,
      ),
    );
    expect(delayClaim.args(input, shard)).toEqual([10, 30_000, 5, 100, 'tok']);
  });

  it('reads each claimed task with its due time and its repeat, if any, and an empty shard as due at Infinity', () => {
    const reply = [
      5000,
      5000,
      'a',
      2,
      'tok',
      4000,
      '{"n":1}',
      '',
      1000,
      'r',
      1,
      'tok',
      4500,
      'null',
      '4500||||{}',
      4500,
    ];
    expect(delayClaim.decode(reply, input, [])).toEqual({
      serverNow: 5000,
      nextDueAt: 5000,
      tasks: [
        { id: 'a', attempt: 2, token: 'tok', runAt: 4000, dueAt: 1000, json: '{"n":1}' },
        { id: 'r', attempt: 1, token: 'tok', runAt: 4500, dueAt: 4500, json: 'null', repeat: '4500||||{}' },
      ],
    });
    expect(delayClaim.decode([5000, -1], input, []).nextDueAt).toBe(Infinity);
  });
});

describe('delay-schedule protocol', () => {
  it('sends the pass (none here), then six arguments per task, and reads one result each, with the state of a kept task', () => {
    const tasks: ScheduleItem[] = [
      { id: 'a', json: '1', time: ['in', 10], onExists: 'replace' },
      { id: 'b', json: '2', time: ['at', 7], onExists: 'keep' },
      { id: 'c', json: '3', time: ['in', 5], onExists: 'replace', maxWaitMs: 60 },
    ];
    expect(delaySchedule.args({ tasks }, shard)).toEqual([
      '',
      ...['a', '1', 'in', 10, 'replace', ''],
      ...['b', '2', 'at', 7, 'keep', ''],
      ...['c', '3', 'in', 5, 'replace', 60],
    ]);
    expect(delaySchedule.decode([100, 7, 1, 110, '', 0, 50, 'active', 1, 105, ''], { tasks }, [])).toEqual({
      serverNow: 100,
      head: 7,
      results: [
        { changed: true, runAt: 110 },
        { changed: false, runAt: 50, state: 'active' },
        { changed: true, runAt: 105 },
      ],
    });
  });
});

describe('delay-move protocol', () => {
  it('reads a placement, or why the task could not move', () => {
    const input = { id: 'a', mode: 'by' as const, ms: -5 };
    expect(delayMove.decode([1, 95, 100, 1], input, [])).toEqual({ runAt: 95, serverNow: 100, isHead: true });
    expect(delayMove.decode([0, 'dead'], input, [])).toBe('dead');
  });
});

describe('delay-dead protocol', () => {
  it("reads a dead letter's payload, attempts and run time from its last run, and its error when it has one", () => {
    const page = delayDead.decode(
      ['a', 900, '{"n":1}', '3:tok:800', 'Error: boom', 'b', 899, '2', '1:t:700', false],
      { count: 2, latest: '+inf', listedAtLatest: 0 },
      [],
    );
    expect(page).toEqual({
      listed: 2,
      items: [
        { id: 'a', diedAt: 900, state: 'dead', runAt: 800, attempts: 3, json: '{"n":1}', lastError: 'Error: boom' },
        { id: 'b', diedAt: 899, state: 'dead', runAt: 700, attempts: 1, json: '2' },
      ],
    });
  });
});

describe('repeat entries', () => {
  it('reads the occurrence, the last run and success, and the schedule, which may hold the separator', () => {
    expect(decodeRepeatEntry('1000||||{"cron":"a|b"}')).toEqual({ occurrence: 1000, schedule: '{"cron":"a|b"}' });
    expect(decodeRepeatEntry('2000|1990|failed|1790|{}')).toEqual({
      occurrence: 2000,
      lastRunAt: 1990,
      lastOutcome: 'failed',
      lastSuccessAt: 1790,
      schedule: '{}',
    });
  });
});
