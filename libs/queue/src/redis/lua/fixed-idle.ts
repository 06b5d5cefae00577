import { kindsOf, type ScriptProtocol } from '../script-protocol';

/** Groups nobody may have pushed to for ttlMs, oldest first (see fixed-idle.lua). */
export const fixedIdle: ScriptProtocol<{ ttlMs: number; count: number }, string[]> = {
  script: 'fixed-idle',
  keys: (shard) => kindsOf(shard, ['lastPush']),
  args: ({ ttlMs, count }) => [ttlMs, count],
  decode: (reply) => reply as string[],
};
