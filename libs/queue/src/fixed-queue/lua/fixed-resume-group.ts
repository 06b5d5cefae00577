import type { FixedScript } from '../fixed-queue.keys';
import { kindsOf } from '../../redis/script-protocol';

export interface FixedResumeGroupInput {
  group: string;
  batchSize: number;
  maxWaitMs: number;
}

export interface GroupResumed {
  /** False when the group was not paused. */
  resumed: boolean;
  /** When the group is due (server ms), -1 when it has nothing to hand out or its batch is still out. */
  dueAt: number;
  serverNow: number;
}

/** Resumes a paused group (see fixed-resume-group.lua). */
export const fixedResumeGroup: FixedScript<'fixed-resume-group', FixedResumeGroupInput, GroupResumed> = {
  script: 'fixed-resume-group',
  keys: (shard, { group }) => [...kindsOf(shard, ['ready', 'lastPush', 'held', 'pausedGroups']), shard.group(group)],
  args: ({ group, batchSize, maxWaitMs }) => [group, batchSize, maxWaitMs],
  decode: (reply) => {
    const [resumed, dueAt, serverNow] = reply as number[];
    return { resumed: resumed === 1, dueAt, serverNow };
  },
};
