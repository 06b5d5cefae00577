import type { ScriptProtocol } from '../script-protocol';
import type { QueueKeys } from '../keys';

export type QueuePassInput =
  | { op: 'alive'; aliveMs: number }
  | { op: 'owe'; why: string; ids: string[] }
  | { op: 'take' | 'renew'; token: string; leaseMs: number }
  | { op: 'done'; token: string; owed: string; lostAt: string; pass: string; owedIdsLength: number };

/**
 * The owed pass of a queue's task source, across processes (see queue-pass.lua): `alive` and `take`
 * answer what is owed ('' for nothing), `owe` and `renew` whether they applied.
 */
export const queuePass: ScriptProtocol<'queue-pass', QueuePassInput, string | boolean, QueueKeys> = {
  script: 'queue-pass',
  keys: (keys) => [keys.meta],
  args: (input) => {
    switch (input.op) {
      case 'alive':
        return [input.op, input.aliveMs];
      case 'owe':
        return [input.op, input.why, input.ids.length > 0 ? JSON.stringify(input.ids) : ''];
      case 'take':
      case 'renew':
        return [input.op, input.token, input.leaseMs];
      case 'done':
        return [input.op, input.token, input.owed, input.lostAt, input.pass, input.owedIdsLength];
    }
  },
  decode: (reply) => (typeof reply === 'string' ? reply : reply === 1),
};
