import type { QueueKind, ReconcilePass, ReconcileTrigger } from '../interfaces';
import { metaMismatch } from './redis.messages';
import type { QueueKeys } from './keys';
import { queueMeta } from './lua/queue-meta';
import { queuePass } from './lua/queue-pass';
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

/**
 * The meta hash's fields beside the record: when its loss was found, the last pass of a task source, the
 * pass owed and until when a live process has a source (see queue-pass.lua).
 */
const LOST_AT = 'lostAt';
const LAST_PASS = 'reconciled';
const OWED = 'owed';
const OWED_IDS = 'owedIds';
const SOURCE_UNTIL = 'sourceUntil';

/** What a check of the record found: there, created afresh (nobody here had seen it), or lost (seen before). */
export type RecordCheck = 'present' | 'created' | 'lost';

/** A queue's data-loss state as Redis holds it, for health and the dashboard. */
export interface RecordState {
  /** This process had seen the record and it is gone: a loss not recorded again yet (DeclaredState does it). */
  missing?: true;
  /** When a process found the record gone after it had seen it (epoch ms); cleared by a pass or an acknowledgement. */
  lostAt?: number;
  lastPass?: ReconcilePass;
  /** A pass of its task source is owed: since when (server ms) and why. */
  owed?: OwedPass;
  /** Whether a live process has a task source for the queue (DelayQueue). */
  sourceLive: boolean;
}

/** A pass of a task source owed across processes, as `owed` stores it (`<server ms>:<why>`). */
export interface OwedPass {
  at: number;
  why: ReconcileTrigger;
  /** As stored: a pass that read it settles it only while it is unchanged. */
  stored: string;
  /** The tasks whose write gave up (`owedIds`, read with `owed` by `state()`): the pass writes them as listed. */
  ids?: string[];
  /** `owedIds`' length in bytes: ids added after the pass read them stay owed. */
  idsBytes?: number;
}

export function parseOwed(stored: string, owedIds?: string): OwedPass | undefined {
  const colon = stored.indexOf(':');
  if (colon <= 0) return undefined;
  const owed: OwedPass = {
    at: Number(stored.slice(0, colon)),
    why: stored.slice(colon + 1) as ReconcileTrigger,
    stored,
  };
  if (owedIds !== undefined) {
    owed.ids = JSON.parse(owedIds) as string[];
    owed.idsBytes = Buffer.byteLength(owedIds);
  }
  return owed;
}

/**
 * What a queue does when a call of this process created its record (a first start, or after its data
 * was lost): a DelayQueue's task source owes a pass then. Implemented by the queue kind's side.
 */
export interface RecordCreated {
  recordCreated(): void;
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

  constructor(
    private readonly connection: RedisConnection,
    readonly keys: QueueKeys,
    private readonly name: string,
    private readonly kind: QueueKind,
    private readonly shards: number,
    /** Whether a loss is reported (health, event): not for what heals by itself (a `@Recurring` queue). */
    readonly reportsLoss: boolean,
    /** Told when a call of this process created the record. */
    private readonly created?: RecordCreated,
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
    const [kind, lostAt, pass, owed, sourceUntil, owedIds] = await this.connection.scripts.call((client) =>
      client.hmget(this.keys.meta, 'kind', LOST_AT, LAST_PASS, OWED, SOURCE_UNTIL, OWED_IDS),
    );
    const owedPass = owed === null ? undefined : parseOwed(owed, owedIds ?? undefined);
    return {
      ...(kind === null && this.seen && { missing: true as const }),
      ...(lostAt !== null && { lostAt: Number(lostAt) }),
      ...(pass !== null && { lastPass: JSON.parse(pass) as ReconcilePass }),
      ...(owedPass !== undefined && { owed: owedPass }),
      sourceLive: sourceUntil !== null && Number(sourceUntil) > this.connection.clock.estimate(),
    };
  }

  /** A process with a task source for the queue is live for `aliveMs` more; the pass owed, if one is. */
  async alive(aliveMs: number): Promise<OwedPass | undefined> {
    const owed = await invoke(this.connection.scripts, queuePass, this.keys, { op: 'alive', aliveMs });
    return typeof owed === 'string' ? parseOwed(owed) : undefined;
  }

  /**
   * Records that a pass is owed (`why`), with the ids of the tasks whose write gave up; false when the
   * record is missing (creating it again owes one).
   */
  async owe(why: ReconcileTrigger, ids: string[]): Promise<boolean> {
    return (await invoke(this.connection.scripts, queuePass, this.keys, { op: 'owe', why, ids })) === true;
  }

  /** Takes the lease on the owed pass: what is owed when this process is to run it. */
  async take(token: string, leaseMs: number): Promise<OwedPass | undefined> {
    const owed = await invoke(this.connection.scripts, queuePass, this.keys, { op: 'take', token, leaseMs });
    return typeof owed === 'string' ? parseOwed(owed) : undefined;
  }

  /** Keeps the lease on the owed pass: false when it is no longer this process'. */
  async renew(token: string, leaseMs: number): Promise<boolean> {
    return (await invoke(this.connection.scripts, queuePass, this.keys, { op: 'renew', token, leaseMs })) === true;
  }

  /** Clears a recorded loss; whether there was one. */
  async acknowledgeLoss(): Promise<boolean> {
    return (await this.connection.scripts.call((client) => client.hdel(this.keys.meta, LOST_AT))) === 1;
  }

  /**
   * Keeps a finished pass of the task source, which settles the loss and the pass owed when it began
   * (`start`), and gives back its lease (`token`, '' for none): a loss found, or a pass owed, since may
   * have taken or missed what it wrote, and stays.
   */
  async passed(pass: ReconcilePass, start: RecordState, token: string): Promise<void> {
    await invoke(this.connection.scripts, queuePass, this.keys, {
      op: 'done',
      token,
      owed: start.owed?.stored ?? '',
      lostAt: start.lostAt === undefined ? '' : String(start.lostAt),
      pass: JSON.stringify(pass),
      owedIdsLength: start.owed?.idsBytes ?? 0,
    });
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
      owesPass: this.kind === 'delay' && this.reportsLoss,
    };
    const stored = await invoke(this.connection.scripts, queueMeta, this.keys, input);
    if (stored.kind !== this.kind || stored.shards !== this.shards || stored.layout !== LAYOUTS[this.kind])
      throw metaMismatch(this.name, stored, this.kind, this.shards, LAYOUTS[this.kind]);
    this.seen = true;
    if (stored.created) this.created?.recordCreated();
    return stored.created;
  }
}

/** Deletes the queue's record (last, by `obliterate`: the next start records it anew). */
export async function deleteQueueMeta(connection: RedisConnection, keys: QueueKeys): Promise<void> {
  await connection.scripts.call((client) => client.unlink(keys.meta));
}
