import type { ScriptProtocol } from '../script-protocol';
import type { QueueKind } from '../../interfaces';
import type { QueueKeys } from '../keys';

/** A queue's record as stored: its kind, shard count and storage layout. */
export interface QueueMeta {
  kind: string;
  shards: number;
  layout: number;
  /** This call created the record: a first start-up, or (`known`) a loss it recorded. */
  created: boolean;
}

export interface QueueMetaInput {
  kind: QueueKind;
  shards: number;
  layout: number;
  /** An earlier layout this version reads as it is: recorded as `layout` when found (0: none). */
  readsAsIs: number;
  /** The caller had seen the record: its absence is a loss, recorded as `lostAt`. */
  known: boolean;
  /** Creating the record owes a pass of the queue's task source (see queue-pass.lua). */
  owesPass: boolean;
}

/** Records a queue on first use and answers what is stored (see queue-meta.lua). */
export const queueMeta: ScriptProtocol<'queue-meta', QueueMetaInput, QueueMeta, QueueKeys> = {
  script: 'queue-meta',
  keys: (keys) => [keys.meta],
  args: ({ kind, shards, layout, readsAsIs, known, owesPass }) => [
    kind,
    shards,
    layout,
    readsAsIs,
    known ? 1 : 0,
    owesPass ? 1 : 0,
  ],
  decode: (reply) => {
    const [kind, shards, layout, created] = reply as [string, string, string, number];
    return { kind, shards: Number(shards), layout: Number(layout), created: created === 1 };
  },
};
