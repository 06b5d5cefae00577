import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import IORedis, { Cluster, type RedisOptions } from 'ioredis';
import { MODULE_OPTIONS_TOKEN } from '../queue.module-definition';
import type { QueueConnection, QueueModuleOptions } from '../interfaces';
import { Scripts, type RedisClient } from './scripts';

function isClient(value: unknown): value is RedisClient {
  return value instanceof IORedis || value instanceof Cluster;
}

function createClient(connection: Exclude<QueueConnection, RedisClient>): RedisClient {
  // Auto-pipelining batches the commands of one event-loop tick into one write: concurrent producers
  // and shard pollers share round trips without any code of ours. Lazy: an application that fails to
  // start before its first command leaves no socket open.
  const defaults = { enableAutoPipelining: true, lazyConnect: true };
  if (typeof connection === 'string') return new IORedis(connection, defaults);
  if ('cluster' in connection) return new Cluster(connection.cluster, { ...defaults, ...connection.options });
  return new IORedis({ ...defaults, ...(connection as RedisOptions) });
}

/**
 * The application's Redis: one command connection shared by every queue, plus a subscriber
 * connection opened only when a consumer listens for wake-up hints.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  readonly client: RedisClient;
  readonly scripts: Scripts;
  private readonly owned: boolean;
  private subscriber?: RedisClient;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  private readonly logger = new Logger('QueueModule');

  constructor(@Inject(MODULE_OPTIONS_TOKEN) options: QueueModuleOptions) {
    const connection = options.connection;
    this.owned = !isClient(connection);
    this.client = isClient(connection) ? connection : createClient(connection);
    this.scripts = new Scripts(this.client);
    if (this.owned) {
      this.client.on('error', (error: Error) => this.logger.warn(`Redis: ${error.message}`));
    }
  }

  /** Listens on a pub/sub channel; the returned function stops listening. */
  async subscribe(channel: string, listener: (message: string) => void): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      await this.subscriberClient().subscribe(channel);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  private subscriberClient(): RedisClient {
    if (!this.subscriber) {
      const subscriber = this.client.duplicate() as RedisClient;
      subscriber.on('error', (error: Error) => this.logger.warn(`Redis subscriber: ${error.message}`));
      subscriber.on('message', (channel: string, message: string) => {
        for (const listener of this.listeners.get(channel) ?? []) listener(message);
      });
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  async onApplicationShutdown(): Promise<void> {
    const closing: Promise<void>[] = [];
    if (this.subscriber) closing.push(close(this.subscriber));
    if (this.owned) closing.push(close(this.client));
    await Promise.all(closing);
  }
}

/** QUIT lets replies still in flight arrive; a client that never connected is simply dropped. */
async function close(client: RedisClient): Promise<void> {
  if (client.status === 'wait' || client.status === 'end') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
