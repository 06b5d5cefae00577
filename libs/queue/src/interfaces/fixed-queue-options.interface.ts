import type { Type } from '@nestjs/common';

export type SchemaClass = Type<object>;

export interface FixedQueueOptions {
  /** Queue name: letters, digits, `.`, `_`, `-`; at most 100 characters. */
  name: string;
  /** Most messages a group holds; a push beyond it evicts the oldest. Default: `FIXED_QUEUE_DEFAULTS.capacity`. */
  capacity?: number;
  /** Most messages handed to a consumer at once, all of one group. Default: `FIXED_QUEUE_DEFAULTS.batchSize`. */
  batchSize?: number;
  /** A group with fewer than `batchSize` messages is flushed once its oldest message waited this long. Default: `FIXED_QUEUE_DEFAULTS.maxWaitMs`. */
  maxWaitMs?: number;
  /** Messages older than this are discarded (counted as expired), never delivered. Default: no limit. */
  maxAgeMs?: number;
  /** A group nobody pushes to for this long is deleted by Redis. Default: `FIXED_QUEUE_DEFAULTS.ttlMs`. */
  ttlMs?: number;
  /** Independent sub-queues (and Cluster hash slots) the groups are spread over. Default: `FIXED_QUEUE_DEFAULTS.shards`. */
  shards?: number;
  /** class-validator class every message must satisfy; invalid pushes throw and write nothing. */
  schema?: SchemaClass;
  /** Size limit of one serialised message; defaults to the module's `maxPayloadBytes`. */
  maxPayloadBytes?: number;
  /** Pushes resolve only once this many replicas hold them (Redis WAIT); see README "Guarantees". Default: off. */
  waitForReplicas?: ReplicaWaitOptions;
}

export interface ReplicaWaitOptions {
  /** Replicas that must acknowledge each write. */
  replicas: number;
  /** How long to wait for them; fewer in time fails the call with QueueReplicationError. */
  timeoutMs: number;
}

export interface PushResult {
  /** Older messages of the group evicted to make room (drop-oldest at capacity). */
  dropped: number;
}

export interface FixedQueueStats {
  /** Groups currently holding messages. */
  groups: number;
  /** Messages held in all groups. */
  pending: number;
  pushed: number;
  dropped: number;
  expired: number;
  delivered: number;
  /** Earliest time a group holding messages is due (Redis time, epoch ms), or null when none holds any. */
  nextDueAt: number | null;
  /** How long the most overdue group has waited past its due time, by Redis' clock; 0 when none is overdue. */
  lagMs: number;
}

/** A group at the head of its shard's ready index (see `FixedQueue.hottestGroups`). */
export interface GroupSummary {
  group: string;
  /** Messages it holds. */
  size: number;
  /** When it is (or was) due for a consumer, Redis time in ms: now for a full group. */
  dueAt: number;
}
