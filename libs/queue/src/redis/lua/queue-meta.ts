import type { QueueKind } from '../../interfaces';
import type { QueueKeys } from '../keys';
import type { ScriptProtocol } from '../script-protocol';

/** A queue's record as stored: its kind, shard count and storage layout. */
export interface QueueMeta {
  kind: string;
  shards: number;
  layout: number;
}

export interface QueueMetaInput {
  kind: QueueKind;
  shards: number;
  layout: number;
  /** An earlier layout this version reads as it is: recorded as `layout` when found (0: none). */
  readsAsIs: number;
}

/** Records a queue on first use and answers what is stored (see queue-meta.lua). */
export const queueMeta: ScriptProtocol<'queue-meta', QueueMetaInput, QueueMeta, QueueKeys> = {
  script: 'queue-meta',
  keys: (keys) => [keys.meta],
  args: ({ kind, shards, layout, readsAsIs }) => [kind, shards, layout, readsAsIs],
  decode: (reply) => {
    const [kind, shards, layout] = reply as [string, string, string];
    return { kind, shards: Number(shards), layout: Number(layout) };
  },
};
