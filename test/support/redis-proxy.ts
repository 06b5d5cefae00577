import { createServer, connect, type Server, type Socket } from 'node:net';
import { startRedis, type RedisServer } from './faults';

/** What ioredis writes to subscribe (RESP): how the proxy tells a subscriber from a command connection. */
const SUBSCRIBE = /\r\nsubscribe\r\n/i;

interface Pair {
  client: Socket;
  upstream: Socket;
  subscriber: boolean;
  /** A command connection whose traffic is thrown away for good (a flow a NAT forgot stays forgotten). */
  holed: boolean;
  /** Whether the last bytes it carried were a call's (its reply still to come). */
  calling: boolean;
}

/**
 * A TCP proxy on loopback between the library and a Redis server, for faults a real network has and a
 * test cannot otherwise make: a subscriber black-holed (its socket open, every byte either way read and
 * thrown away, as a NAT or load balancer does when it forgets a flow, so TCP on the library's side sees
 * nothing wrong), and replies on command connections held back, then let through in order (a process
 * paused between sending a call and reading its reply), or command connections black-holed the same
 * way as subscribers, each for good, while new ones may be let through again (the path restored).
 */
export class RedisProxy {
  private server?: Server;
  private readonly pairs = new Set<Pair>();
  /** While set, every connection that subscribes (now or later) is black-holed. */
  private holing = false;
  /** While set, every command connection (open or opened later) is black-holed, and stays so. */
  private holingCommands = false;
  /** Replies of command connections held back, in the order they came, while set. */
  private held?: (() => void)[];
  /** Replies are held from the first command that matches this. */
  private armed?: RegExp;
  /** When a command connection last carried anything, either way. */
  private lastTraffic = Date.now();
  port = 0;
  /** Command connections accepted so far (a subscriber counts until its first SUBSCRIBE). */
  commandConnections = 0;

  constructor(private readonly target: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      const pair: Pair = { client, upstream, subscriber: false, holed: this.holingCommands, calling: false };
      this.pairs.add(pair);
      this.commandConnections++;
      client.on('data', (chunk) => {
        const text = chunk.toString('latin1');
        if (SUBSCRIBE.test(text)) pair.subscriber = true;
        if (pair.subscriber) {
          if (!this.holing) upstream.write(chunk);
          return;
        }
        if (pair.holed) return;
        this.lastTraffic = Date.now();
        pair.calling = true;
        if (this.armed?.test(text)) {
          this.armed = undefined;
          this.held ??= [];
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (pair.subscriber) {
          if (!this.holing) client.write(chunk);
          return;
        }
        if (pair.holed) return;
        this.lastTraffic = Date.now();
        pair.calling = false;
        if (this.held) this.held.push(() => client.write(chunk));
        else client.write(chunk);
      });
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as { port: number }).port;
  }

  /** Black-holes the subscriber's connections from now on (or forwards again). */
  blackHoleSubscribers(on: boolean): void {
    this.holing = on;
  }

  /**
   * Black-holes every command connection open now and each one opened from now on, for good; off lets
   * the connections opened afterwards through (those already black-holed stay so).
   */
  blackHoleCommands(on: boolean): void {
    this.holingCommands = on;
    if (!on) return;
    for (const pair of this.pairs) if (!pair.subscriber) pair.holed = true;
  }

  /**
   * Whether no command connection carried anything for `ms`, the last thing each carried being a
   * reply: no call is waiting for one (when not holding).
   */
  quietFor(ms: number): boolean {
    const calling = [...this.pairs].some((pair) => !pair.subscriber && pair.calling);
    return !calling && Date.now() - this.lastTraffic >= ms;
  }

  /** Holds command connections' replies from now on, or from the first command that matches `after`. */
  hold(after?: RegExp): void {
    if (after === undefined) this.held ??= [];
    else this.armed = after;
  }

  /** Lets the held replies through, in the order they came, and holds nothing more. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.armed = undefined;
    for (const write of held) write();
  }

  async stop(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/**
 * A private redis-server behind a RedisProxy for the enclosing `describe`: started before its tests,
 * stopped after them. `url` is the proxy's, for the applications that must go through it.
 */
export function useProxiedRedis(): { readonly proxy: RedisProxy; readonly url: string } {
  let server: RedisServer | undefined;
  let proxy: RedisProxy | undefined;
  beforeAll(async () => {
    server = await startRedis();
    proxy = new RedisProxy(server.port);
    await proxy.start();
  });
  afterAll(async () => {
    await proxy?.stop();
    await server?.stop();
  });
  return {
    get proxy() {
      if (!proxy) throw new Error('useProxiedRedis(): read its proxy in a test or hook');
      return proxy;
    },
    get url() {
      return `redis://127.0.0.1:${this.proxy.port}`;
    },
  };
}
