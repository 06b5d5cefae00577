import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable, Logger } from '@nestjs/common';
import { QueueConfigError, QueueConnectionError, QueueMemoryError } from './errors';
import { QueueEvents } from './events/queue-events';
import { LIBRARY_VERSION } from './library-version';
import { incompatibleProcess } from './queue.messages';
import { QueueSettings } from './queue.settings';
import { DATA_CONTRACT, SERVES_FROM } from './redis/data-contract';
import { processAnnounce, type AnnouncedProcess } from './redis/lua/process-announce';
import { invoke } from './redis/script-protocol';
import { RedisConnection } from './redis/redis-connection';

/**
 * One announcement every this many ms: a command per process, not per consumer, so an idle consumer's
 * budget (about one command a second) holds.
 */
export const ANNOUNCE_EVERY_MS = 5_000;
/** A process not heard from for this long is gone: three announcements missed. */
export const PROCESS_LEASE_MS = 3 * ANNOUNCE_EVERY_MS;

/**
 * The processes of the application under this prefix, whatever their version: each announces itself
 * in Redis (its library version and the data contract it speaks) every few seconds while it lives, so
 * that every process knows which versions share Redis during a deploy. A process that finds a live one
 * whose contract it cannot work beside refuses to start; while a live process speaks an earlier
 * contract that this one still serves, this one keeps to it, and moves to its own once none has been
 * seen for a lease (`dataContract: 'auto'`), unless the option pins it. Health, the dashboard and
 * `/metrics` show the versions.
 */
@Injectable()
export class QueueProcesses {
  private readonly logger = new Logger('QueueModule');
  private readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly startedAt = Date.now();
  private readonly keys: { processes: string };
  private timer?: NodeJS.Timeout;
  private live: AnnouncedProcess[] = [];
  private spoken: number;

  constructor(
    private readonly connection: RedisConnection,
    private readonly settings: QueueSettings,
    private readonly events: QueueEvents,
  ) {
    this.keys = { processes: `${settings.prefix}:{processes}:announced` };
    // Until the first announcement says who else is there, the oldest contract this version serves.
    this.spoken = settings.dataContract === 'auto' ? SERVES_FROM : settings.dataContract;
  }

  /** The library version of this process. */
  get version(): string {
    return LIBRARY_VERSION;
  }

  /** The data contract this process speaks now (what its writes keep to). */
  get contract(): number {
    return this.spoken;
  }

  /** The live processes under the prefix, this one included, as last read (every few seconds). */
  list(): AnnouncedProcess[] {
    return this.live.map((entry) => ({ ...entry }));
  }

  /** How many live processes run each library version. */
  versions(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { version } of this.live) counts[version] = (counts[version] ?? 0) + 1;
    return counts;
  }

  /**
   * @internal The first announcement, at start-up: refuses to start beside a process this one cannot
   * work with. A Redis at maxmemory, or with `startup: 'continue'` an unreachable one, is left to the
   * periodic announcements.
   */
  async start(): Promise<void> {
    try {
      const incompatible = await this.announce();
      if (incompatible) throw new QueueConfigError(incompatible);
    } catch (error) {
      // A full Redis refuses the announcement's write, not the consumers that drain it: the process
      // starts, and announces itself once memory is freed.
      const later =
        error instanceof QueueMemoryError ||
        (error instanceof QueueConnectionError && this.settings.startup === 'continue');
      if (!later) throw error;
    }
    this.timer = setInterval(() => void this.periodic(), ANNOUNCE_EVERY_MS);
    this.timer.unref();
  }

  /** @internal Leaves: its entry is deleted rather than left to lapse, so a rollout's switch comes sooner. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.timer === undefined) return;
    this.timer = undefined;
    await invoke(this.connection.scripts, processAnnounce, this.keys, { ...this.self(), leaving: true }, 'now').catch(
      () => undefined,
    );
  }

  private async periodic(): Promise<void> {
    try {
      const incompatible = await this.announce();
      if (incompatible) this.logger.error(incompatible);
    } catch {
      // Redis unreachable or full: the connection's own summaries say so; the next announcement tries again.
    }
  }

  private self() {
    return {
      id: this.id,
      version: LIBRARY_VERSION,
      contract: DATA_CONTRACT,
      serves: SERVES_FROM,
      startedAt: this.startedAt,
      leaving: false,
      leaseMs: PROCESS_LEASE_MS,
    };
  }

  /** Announces this process, reads the others; the refusal text for one it cannot work beside. */
  private async announce(): Promise<string | undefined> {
    const { live } = await invoke(this.connection.scripts, processAnnounce, this.keys, this.self(), 'now');
    this.live = live;
    const others = live.filter((entry) => entry.id !== this.id);
    const mine = { version: LIBRARY_VERSION, contract: DATA_CONTRACT };
    for (const other of others) {
      if (other.contract < SERVES_FROM) return incompatibleProcess(this.settings.prefix, mine, other, false);
      if (other.serves > DATA_CONTRACT) return incompatibleProcess(this.settings.prefix, mine, other, true);
    }
    if (this.settings.dataContract === 'auto') {
      const oldest = Math.min(DATA_CONTRACT, ...others.map((entry) => entry.contract));
      this.speak(Math.max(SERVES_FROM, oldest));
    }
    return undefined;
  }

  private speak(contract: number): void {
    if (contract === this.spoken) return;
    const from = this.spoken;
    this.spoken = contract;
    const versions = this.versions();
    this.logger.log(
      `Data contract ${from} → ${contract}: ${contract > from ? 'no process of an earlier contract was seen for ' + PROCESS_LEASE_MS + ' ms' : 'a process of an earlier contract is live'} (versions live under "${this.settings.prefix}": ${JSON.stringify(versions)})`,
    );
    if (this.events.has('processes.contract-changed'))
      this.events.emit('processes.contract-changed', { from, to: contract, versions });
  }
}
