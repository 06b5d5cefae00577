import IORedis, { Cluster } from 'ioredis';
import { CommandHeartbeat, type SupervisedClient } from './command-heartbeat';
import { silentConnection } from './redis.messages';
import type { RedisClient } from './redis-client';

interface Logs {
  warn(message: string): void;
  log(message: string): void;
}

interface Watched {
  heartbeat: CommandHeartbeat;
  ready: () => void;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * Keeps every command connection of a client the module opened answering: the client itself, or each
 * node connection of a Cluster, as ioredis adds them (a Cluster routes each call to a node's own
 * connection, and replaces a node's connection it lost when a call is next sent to that node's slots).
 * Each connection that goes silent is replaced (CommandHeartbeat); an outage is logged once, with the
 * number of reconnections it took, however many that is.
 */
export class CommandSupervisor {
  private readonly watched = new Map<IORedis, Watched>();
  /** Connections replaced and not answering since, by label (a Cluster node's connection is a new client each time). */
  private readonly outages = new Map<string, { since: number; restarts: number }>();
  /** Connections dropped for silence since start-up. */
  restarts = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly logs: Logs,
  ) {}

  start(): void {
    const { client } = this;
    if (client instanceof Cluster) {
      client.on('+node', this.added);
      client.on('-node', this.removed);
      for (const node of client.nodes('all')) this.added(node);
    } else {
      this.added(client);
    }
  }

  stop(): void {
    this.client.off('+node', this.added);
    this.client.off('-node', this.removed);
    for (const node of [...this.watched.keys()]) this.removed(node);
  }

  /** Silence of up to `ms` is expected on any of the connections (a WAIT for replicas under way). */
  allowSilence(ms: number): void {
    for (const { heartbeat } of this.watched.values()) heartbeat.allowSilence(ms);
  }

  private readonly added = (node: IORedis) => {
    if (this.watched.has(node)) return;
    const label = this.client instanceof Cluster ? `Redis node ${node.options.host}:${node.options.port}` : 'Redis';
    const heartbeat = new CommandHeartbeat(node as unknown as SupervisedClient, {
      error: silentConnection,
      stalled: (silentMs, waiting) => this.stalled(label, silentMs, waiting),
    });
    const ready = () => this.answered(label);
    node.on('ready', ready);
    this.watched.set(node, { heartbeat, ready });
    heartbeat.start();
  };

  private readonly removed = (node: IORedis) => {
    const watched = this.watched.get(node);
    if (!watched) return;
    this.watched.delete(node);
    watched.heartbeat.stop();
    node.off('ready', watched.ready);
  };

  private stalled(label: string, silentMs: number, waiting: number): void {
    this.restarts++;
    const outage = this.outages.get(label);
    if (outage) {
      outage.restarts++;
      return;
    }
    this.outages.set(label, { since: Date.now() - silentMs, restarts: 1 });
    this.logs.warn(
      `${label}: no reply for ${seconds(silentMs)}${waiting > 0 ? ` with ${waiting} call(s) waiting` : ''}; ` +
        'dropped the connection and connecting again (calls that were waiting fail, outcome unknown)',
    );
  }

  private answered(label: string): void {
    const outage = this.outages.get(label);
    if (!outage) return;
    this.outages.delete(label);
    this.logs.log(
      `${label}: answering again (after ${seconds(Date.now() - outage.since)}, ${outage.restarts} reconnection(s))`,
    );
  }
}
