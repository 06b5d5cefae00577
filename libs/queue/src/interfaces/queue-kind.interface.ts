/** The two kinds of queue: `FixedQueue` (batches per group) and `DelayQueue` (tasks due at a time). */
export type QueueKind = 'fixed' | 'delay';
