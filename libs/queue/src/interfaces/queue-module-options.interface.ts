import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';

/** Nodes of a Redis Cluster, with options passed through to ioredis' `Cluster`. */
export interface ClusterConnection {
  cluster: ClusterNode[];
  options?: ClusterOptions;
}

/**
 * Where Redis is: a URL (`redis://`, `rediss://`), ioredis options, a cluster, or a client
 * the application already owns (the module then never closes it).
 */
export type QueueConnection = string | RedisOptions | ClusterConnection | Redis | Cluster;

export interface QueueModuleOptions {
  connection: QueueConnection;
  /** Leads every key (`<prefix>:{<queue>:<shard>}:...`), so an ACL pattern `~<prefix>:*` covers them. Default: `QUEUE_DEFAULTS.module.prefix`. */
  prefix?: string;
  /**
   * Run `@BatchConsumer`, `@DelayConsumer` and `@Recurring` methods in this process. `false` for
   * producer-only deployments: their options are still checked and `@Recurring` schedules declared, but
   * nothing is claimed here. Default: `QUEUE_DEFAULTS.module.consumers`.
   */
  consumers?: boolean;
  /** How long `app.close()` waits for running handlers before giving up on them. Default: `QUEUE_DEFAULTS.module.shutdownTimeoutMs`. */
  shutdownTimeoutMs?: number;
  /**
   * Longest an idle consumer sleeps before asking Redis again when it knows of no earlier due work.
   * Wake-ups for new work arrive by pub/sub, and every shard is polled again once the subscriber
   * reconnects (hints published meanwhile are lost); this only bounds the delay should a hint be lost
   * otherwise. Each shard of a consumed queue costs one script call per `idlePollMs` when idle (8
   * shards at 60 s: one call every 7.5 s). Default: `QUEUE_DEFAULTS.module.idlePollMs`.
   */
  idlePollMs?: number;
  /** Default size limit of one serialised message or task payload. Default: `QUEUE_DEFAULTS.module.maxPayloadBytes`. */
  maxPayloadBytes?: number;
  /**
   * Longest one Redis call may wait, for a reply or for a connection, before it rejects; applies to the
   * connections the module opens (a client you pass in keeps its own settings). While Redis is
   * unreachable, calls fail at the next failed reconnection attempt (about 2 s at most) or after this
   * long, whichever comes first: nothing piles up in memory. Default: `QUEUE_DEFAULTS.module.commandTimeoutMs`.
   */
  commandTimeoutMs?: number;
  /**
   * What start-up does when Redis cannot be reached. `'fail'` (`QUEUE_DEFAULTS.module.startup`): the application does not start,
   * with an error naming the address and the reason. `'continue'`: it starts, logs a warning, and
   * connects in the background; until Redis answers, pushes and schedules reject (after at most
   * `commandTimeoutMs`) and consumers keep retrying. Queues then check their stored shard count once
   * Redis answers, and log a mismatch instead of refusing to start.
   */
  startup?: 'fail' | 'continue';
  /**
   * What start-up does when Redis' `maxmemory-policy` is not `noeviction` (read with `INFO memory`; on a
   * Cluster, of every master): Redis would then delete keys when memory is full, which loses queued
   * messages and tasks silently. `'warn'` (`QUEUE_DEFAULTS.module.evictionPolicy`): log a warning saying what
   * can be lost and how to fix it. `'fail'`: the application does not start.
   */
  evictionPolicy?: 'warn' | 'fail';
  /**
   * The data contract this process keeps to while processes of another version share Redis (a rolling
   * deploy): `'auto'` (`QUEUE_DEFAULTS.module.dataContract`) keeps to the earliest contract a live process
   * speaks and moves to this version's own once none has been seen for a lease (15 s); a number pins it,
   * for a slow rollout (an earlier contract this version serves) or to force the switch (its own). See
   * Upgrading in the README.
   */
  dataContract?: 'auto' | number;
  /**
   * OpenTelemetry spans for every queue (a queue's own `tracing` option overrides it): producer spans
   * for pushes and schedules, their context stored with each message or task, and a process span per
   * batch or task linked to it. Needs `@opentelemetry/api` (the application registers the SDK). Off,
   * nothing is stored and nothing is loaded. See docs/tracing.md. Default: `QUEUE_DEFAULTS.module.tracing`.
   */
  tracing?: boolean;
}
