import { QueueConfigError } from '../errors';
import { metaMismatch } from '../queue.messages';
import type { QueueKind } from '../queue.registry';
import type { QueueKeys } from './keys';
import type { Scripts } from './scripts';

/** Records the queue's kind and shard count in Redis, or fails if they differ from what is stored. */
export async function assertQueueMeta(scripts: Scripts, keys: QueueKeys, name: string, kind: QueueKind, shards: number): Promise<void> {
  const [storedKind, storedShards] = await scripts.run<[string, string]>('queue-meta', [keys.meta], [kind, shards]);
  if (storedKind !== kind || Number(storedShards) !== shards) {
    throw new QueueConfigError(metaMismatch(name, { kind: storedKind, shards: Number(storedShards) }, kind, shards));
  }
}
