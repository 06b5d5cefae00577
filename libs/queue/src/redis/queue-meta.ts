import type { QueueKind, ReconcilePass, ReconcileTrigger } from '../interfaces';
import { metaMismatch } from './redis.messages';
import type { QueueKeys } from './keys';
import { queueMeta } from './lua/queue-meta';
import type { RedisConnection } from './redis-connection';
import { invoke } from './script-protocol';

/**
 * How each kind of queue stores its data. Raised when a change would make data written by an
 * earlier version unreadable (delay 2: attempts and tokens apart from the payload), or data written by
 * this version unsafe for an earlier one (fixed 2: held groups, which 0.1 would claim from under
 * their deliveries).
 */
const LAYOUTS: Readonly<Record<QueueKind, number>> = { fixed: 2, delay: 2 };

/**
 * Earlier layouts this version reads as they are: recorded as the current one on start-up, so that a
 * process of the earlier version refuses to start on the queue from then on. 0: none.
 */
const UPGRADES: Readonly<Record<QueueKind, number>> = { fixed: 1, delay: 0 };

/** The meta hash's fields beside the record: when its loss was found, and the last pass of a task source. */
const LOST_AT = 'lostAt';
const LAST_PASS = 'reconciled';

/** What a check of the record found: there, created afresh (nobody here had seen it), or lost (seen before). */
export type RecordCheck = 'present' | 'created' | 'lost';

/** A queue's data-loss state as Redis holds it, for health and the dashboard. */
export interface RecordState {
  /** This process had seen the record and it is gone: a loss not recorded again yet (DeclaredState does it). */
  missing?: true;
  /** When a process found the record gone after it had seen it (epoch ms); cleared by a pass or an acknowledgement. */
  lostAt?: number;
  lastPass?: ReconcilePass;
}

/**
 * A queue's record in Redis (kind, shard count, layout: queue-meta.lua), and what its absence means.
 * The record is written when a queue is first used, so a process that had seen it and finds it gone
 * knows the queue's data went with it; the one call that creates it again learns it did, which is
 * how a loss (or a first start-up) is acted on once across every process.
 */
export class QueueRecord {
  /** This process saw the record in Redis (recorded it, or found it): from then on its absence is a loss. */
  private seen = false;
  /** Told when a call of this process created the record: at start-up, or after a loss. */
  onCreated?: (trigger: ReconcileTrigger) => void;

  constructor(
    private readonly connection: RedisConnection,
    readonly keys: QueueKeys,
    private readonly name: string,
    private readonly kind: QueueKind,
    private readonly shards: number,
    /** Whether a loss is reported (health, event): not for what heals by itself (a `@Recurring` queue). */
    readonly reportsLoss: boolean,
  ) {}

  /**
   * Records the queue's kind, shard count and layout in Redis, or fails if they differ from what is
   * stored (once Redis answers, with `startup: 'continue'`: see `RedisConnection.whenReady`); then runs
   * `ready` (an upgrade of data an earlier version wrote, work that needs Redis).
   */
  assert(ready?: () => Promise<void>): Promise<void> {
    const checked = this.connection.whenReady(`queue "${this.name}"`, async () => {
      await this.record();
      await ready?.();
    });
    // This fails start-up, which is often not followed by app.close(): an open connection would keep the process alive.
    return checked.catch(async (error: unknown) => {
      await this.connection.onApplicationShutdown();
      throw error;
    });
  }

  /**
   * Records the queue again when its record is gone: one HEXISTS while it is there. Rejects with
   * QueueConfigError when another process recorded other values meanwhile.
   */
  async restore(): Promise<RecordCheck> {
    // queue-meta.lua writes `kind` with the rest, and only checks the rest when it finds it.
    if ((await this.connection.scripts.call((client) => client.hexists(this.keys.meta, 'kind'))) === 1) {
      this.seen = true;
      return 'present';
    }
    const known = this.seen;
    if (!(await this.record())) return 'present';
    return known ? 'lost' : 'created';
  }

  /** Its loss (if unacknowledged, or not recorded again yet) and its last pass, from any process. */
  async state(): Promise<RecordState> {
    const [kind, lostAt, pass] = await this.connection.scripts.call((client) =>
      client.hmget(this.keys.meta, 'kind', LOST_AT, LAST_PASS),
    );
    return {
      ...(kind === null && this.seen && { missing: true as const }),
      ...(lostAt !== null && { lostAt: Number(lostAt) }),
      ...(pass !== null && { lastPass: JSON.parse(pass) as ReconcilePass }),
    };
  }

  /** Clears a recorded loss; whether there was one. */
  async acknowledgeLoss(): Promise<boolean> {
    return (await this.connection.scripts.call((client) => client.hdel(this.keys.meta, LOST_AT))) === 1;
  }

  /**
   * Keeps a finished pass of the task source, which clears the loss recorded when it began (`lostAt`
   * then): a loss found since may have taken what it wrote, and stays reported.
   */
  async passed(pass: ReconcilePass, lostAtStart: number | undefined): Promise<void> {
    const { lostAt } = await this.state();
    await this.connection.scripts.call((client) => client.hset(this.keys.meta, LAST_PASS, JSON.stringify(pass)));
    if (lostAt !== undefined && lostAt === lostAtStart) await this.acknowledgeLoss();
  }

  /** Deletes the record (last, by `obliterate`: the next start records it anew). */
  async delete(): Promise<void> {
    this.seen = false;
    await deleteQueueMeta(this.connection, this.keys);
  }

  /** Records the queue (queue-meta.lua), or fails if Redis holds another kind, shard count or layout for it. */
  private async record(): Promise<boolean> {
    const input = {
      kind: this.kind,
      shards: this.shards,
      layout: LAYOUTS[this.kind],
      readsAsIs: UPGRADES[this.kind],
      known: this.seen && this.reportsLoss,
    };
    const known = this.seen;
    const stored = await invoke(this.connection.scripts, queueMeta, this.keys, input);
    if (stored.kind !== this.kind || stored.shards !== this.shards || stored.layout !== LAYOUTS[this.kind])
      throw metaMismatch(this.name, stored, this.kind, this.shards, LAYOUTS[this.kind]);
    this.seen = true;
    if (stored.created) this.onCreated?.(known ? 'data-lost' : 'record-created');
    return stored.created;
  }
}

/** Deletes the queue's record (last, by `obliterate`: the next start records it anew). */
export async function deleteQueueMeta(connection: RedisConnection, keys: QueueKeys): Promise<void> {
  await connection.scripts.call((client) => client.unlink(keys.meta));
}
