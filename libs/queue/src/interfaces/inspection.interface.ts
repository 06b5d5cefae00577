import type { TaskInfo } from './delay-queue-options.interface';

/** One page of a listing: `cursor` asks for the next, null when there is nothing more. */
export interface Page<T> {
  items: T[];
  cursor: string | null;
}

/** What a paged listing takes: the cursor of the previous page (none for the first), and the page size. */
export interface PageOptions {
  cursor?: string;
  /** Most items per page, 1 to 1,000. Default 100. */
  limit?: number;
}

/** A message at the head of a group (see `FixedQueue.peek`). */
export interface PeekedMessage<T> {
  message: T;
  /** When it was pushed, Redis time in epoch ms. */
  pushedAt: number;
}

/** A group holding messages (see `FixedQueue.groups`). */
export interface GroupListing {
  group: string;
  /** Messages it holds, by the queue's counters. */
  size: number;
}

/** A group paused by `FixedQueue.pauseGroup` (see `FixedQueue.pausedGroups`). */
export interface PausedGroup {
  group: string;
  /** When it was paused, Redis time in epoch ms. */
  pausedAt: number;
  /** `'manual'`: by `pauseGroup`; `'exhausted'`: its head batch failed its last attempt (`onExhausted: 'pause-group'`). */
  reason: GroupPauseReason;
}

/** Why a group is paused. */
export type GroupPauseReason = 'manual' | 'exhausted';

/** The states `DelayQueue.list` pages through: by run time, by lease end, newest death first. */
export type TaskListState = 'scheduled' | 'active' | 'dead';

/** A task as `DelayQueue.list` shows it. */
export interface ListedTask<T> extends TaskInfo<T> {
  /** Active tasks: when the running delivery's lease ends (it is delivered again then unless acknowledged). */
  leaseEndsAt?: number;
  /** Dead tasks: when they were dead-lettered. */
  diedAt?: number;
  lastError?: string;
}
