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
  /** Leads every key (`<prefix>:{<queue>:<shard>}:...`), so an ACL pattern `~<prefix>:*` covers them. Default `nrq`. */
  prefix?: string;
  /** Run `@BatchConsumer` / `@DelayConsumer` handlers in this process. `false` for producer-only deployments. Default `true`. */
  consumers?: boolean;
  /** How long `app.close()` waits for running handlers before giving up on them. Default 10 s. */
  shutdownTimeoutMs?: number;
  /**
   * Longest an idle consumer sleeps before asking Redis again when it knows of no earlier due work.
   * Wake-ups for new work normally arrive by pub/sub; this bounds the delay if one is lost. Each shard of a consumed queue costs
   * one script call per `idlePollMs` when idle (8 shards at 5 s: 1.6 calls/s). Default 5 s.
   */
  idlePollMs?: number;
  /** Default size limit of one serialised message or task payload. Default 1 MiB. */
  maxPayloadBytes?: number;
}
