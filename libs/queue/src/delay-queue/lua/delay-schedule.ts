import type { DelayScript } from '../delay-queue.keys';
import type { OnExists, TaskState } from '../../interfaces';
import type { ResolvedTime } from '../../validation/time';
import { callKeysOf, kindsOf, type ShardKeys } from '../../redis/script-protocol';
import type { CallKey } from '../../redis/call-keys';

export interface ScheduleItem {
  id: string;
  json: string;
  time: ResolvedTime;
  onExists: OnExists;
  /** Debounced: the most it may wait after the schedule that opened its window (which replaces). */
  maxWaitMs?: number;
  /** A schedule that may reach Redis more than once: applied once. */
  call?: CallKey;
}

export interface ScheduleItemResult {
  /** The call wrote the task (created or replaced it); false when it kept the existing one. */
  changed: boolean;
  /** A pass' task written by someone since the pass began: left to the next pass (see delay-pass.lua). */
  newer?: true;
  /** A try that came after its call's deadline, which wrote nothing (see the call-keys include). */
  late?: true;
  runAt: number;
  /** State of an existing task the call kept. */
  state?: TaskState;
}

export interface DelayScheduleReply {
  serverNow: number;
  /** The shard's earliest run time, or -1. */
  head: number;
  results: ScheduleItemResult[];
}

export interface ScheduleInput {
  tasks: ScheduleItem[];
  /** The pass of the task source writing them (see delay-pass.lua), if one is. */
  pass?: string;
}

/** Schedules (or replaces) tasks of one shard, in order (see delay-schedule.lua). */
export const delaySchedule: DelayScript<'delay-schedule', ScheduleInput, DelayScheduleReply> = {
  script: 'delay-schedule',
  keys: (shard, { tasks }) => {
    const keys = kindsOf(shard, ['due', 'active', 'data', 'dead', 'stats', 'errors', 'runs', 'successors', 'passes']);
    const calls = keyedCalls(shard, tasks);
    return calls === undefined ? keys : [...keys, ...calls.keys];
  },
  args: ({ tasks, pass }, shard) => {
    const args = tasks.flatMap(({ id, json, time, onExists, maxWaitMs }) => [
      id,
      json,
      time[0],
      time[1],
      onExists,
      maxWaitMs === undefined ? '' : maxWaitMs,
    ]);
    const calls = keyedCalls(shard, tasks);
    return calls === undefined ? [pass ?? '', ...args] : [pass ?? '', ...args, ...calls.args];
  },
  decode: (reply) => {
    const values = reply as (number | string)[];
    const results: ScheduleItemResult[] = [];
    for (let i = 2; i < values.length; i += 3) {
      results.push({
        changed: values[i] === 1,
        ...(values[i] === 2 && { newer: true as const }),
        ...(values[i] === 3 && { late: true as const }),
        runAt: values[i + 1] as number,
        ...(values[i + 2] ? { state: values[i + 2] as TaskState } : {}),
      });
    }
    return { serverNow: values[0] as number, head: values[1] as number, results };
  },
};

/** The call-keys section of a call with keyed schedules, or none. */
function keyedCalls(shard: ShardKeys, tasks: ScheduleItem[]) {
  return tasks.some(({ call }) => call !== undefined)
    ? callKeysOf(
        shard,
        tasks.map(({ call }) => call),
      )
    : undefined;
}
