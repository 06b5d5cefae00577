/**
 * Stable 32-bit FNV-1a over UTF-16 code units. It must never change: it decides which shard holds
 * a group or task, so every process (and every version) has to agree on it.
 */
export function hashName(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function shardOf(name: string, shards: number): number {
  return hashName(name) % shards;
}

/**
 * Keys of a shard that hold one entry per name, every queue kind's: the record of a keyed call (see the
 * call-keys include), named by its call key. A kind names its own key kinds beside it (`<kind>.keys.ts`).
 */
export const CALL_MEMBER_KEY_KINDS = ['call'] as const;

/**
 * Key names of one queue, of the key kinds `Kind` its kind names. Every key of a shard shares the hash
 * tag `{<queue>:<shard>}`, so a script touches a single Cluster slot; the prefix leads so that an ACL
 * pattern `~<prefix>:*` covers all keys.
 */
export class QueueKeys<Kind extends string = string> {
  readonly meta: string;
  readonly wakeChannel: string;
  /** Where a pass of the queue's task source owed is announced to the processes that have one. */
  readonly passChannel: string;
  private readonly tags: string[];

  constructor(prefix: string, queue: string, shards: number) {
    this.meta = `${prefix}:{${queue}}:meta`;
    this.wakeChannel = `${prefix}:${queue}:wake`;
    this.passChannel = `${prefix}:${queue}:pass`;
    this.tags = Array.from({ length: shards }, (_, shard) => `${prefix}:{${queue}:${shard}}`);
  }

  /** The hash of every `@Recurring` schedule declared under the prefix: name → `Class.method`. */
  static recurringIndex(prefix: string): string {
    return `${prefix}:{recurring}:schedules`;
  }

  key(shard: number, kind: Kind): string {
    return `${this.tags[shard]}:${kind}`;
  }

  member(shard: number, kind: string, name: string): string {
    return `${this.tags[shard]}:${kind}:${name}`;
  }
}
