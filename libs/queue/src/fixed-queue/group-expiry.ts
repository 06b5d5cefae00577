import type { Logger } from '@nestjs/common';
import { QueueConnectionError } from '../errors';
import { describeError } from '../utils/errors';
import { logLine } from '../utils/log-line';
import { RepeatedFailure } from '../utils/repeated-failure';
import type { FixedQueueStore } from './fixed-queue.store';

/** The longest wait between two looks at all shards: bounds how long past ttlMs a group may live. */
const MAX_ROUND_MS = 60_000;
/** Groups one expire call checks (their lists are its keys); a shard with more gets another call at once. */
const GROUPS_PER_CALL = 100;
/** Calls per shard visit: a backlog of idle groups goes over several visits rather than one long burst. */
const CALLS_PER_VISIT = 10;

/**
 * Applies ttlMs: deletes groups nobody pushed to for that long, their messages counted expired. Pushes
 * do not refresh a TTL on every visit (it was a third of a push's cost in Redis); instead every process
 * holding the queue looks at one shard at a time, a whole round every min(ttlMs, 60 s), so a group goes
 * between ttlMs and ttlMs + that round after its last push, while any process of the queue runs. A
 * look is one short script call; several processes doing it agree, as the script checks again. A look
 * that finds nothing idle learns when the shard's first group can be (its oldest push plus ttlMs, or
 * now plus ttlMs when it holds none): the shard is skipped until then, which takes an idle queue's
 * looks from one every round / shards to one per shard every ttlMs.
 */
export class GroupExpiry {
  private timer?: NodeJS.Timeout;
  private next = 0;
  private stopped = false;
  /** Per shard, the local time before which none of its groups can be idle for ttlMs. */
  private readonly quietUntil: number[];
  private readonly failures: RepeatedFailure;

  constructor(
    private readonly store: FixedQueueStore,
    private readonly shards: number,
    private readonly ttlMs: number,
    private readonly label: string,
    logger: Logger,
    private readonly onExpired: (group: string, count: number) => void,
  ) {
    this.failures = new RepeatedFailure({
      first: (error) => logger.warn(logLine(this.label, 'could not expire idle groups, retrying', { error })),
      summary: (count, sinceMs, error) =>
        logger.warn(logLine(this.label, 'still cannot expire idle groups', { failures: count, forMs: sinceMs, error })),
      recovered: (count, sinceMs) =>
        logger.log(logLine(this.label, 'expiring idle groups again', { failures: count, forMs: sinceMs })),
    });
    this.quietUntil = new Array<number>(shards).fill(0);
  }

  /**
   * Every shard at once, then one shard every round / shards. Not after `stop()`: with `startup:
   * 'continue'` the start comes once Redis answers, which may be after the app closed.
   */
  start(): void {
    if (!this.stopped) void this.visitAll();
  }

  /**
   * No visit starts from now on. One under way is not waited for (a frozen Redis would hold the
   * shutdown up to its command timeout): it fails quietly when the connection closes, and the next
   * process to start looks at that shard again.
   */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async visitAll(): Promise<void> {
    for (let shard = 0; shard < this.shards && !this.stopped; shard++) await this.visit(shard);
    this.arm();
  }

  private arm(): void {
    if (this.stopped) return;
    const every = Math.max(1, Math.floor(Math.min(this.ttlMs, MAX_ROUND_MS) / this.shards));
    this.timer = setTimeout(() => {
      const shard = this.next;
      this.next = (shard + 1) % this.shards;
      void this.visit(shard).then(() => this.arm());
    }, every);
    this.timer.unref();
  }

  private async visit(shard: number): Promise<void> {
    if (Date.now() < this.quietUntil[shard]) return;
    try {
      for (let call = 0; call < CALLS_PER_VISIT && !this.stopped; call++) {
        const { groups, notBefore, serverNow } = await this.store.idleGroups(shard, GROUPS_PER_CALL);
        if (groups.length === 0) {
          // Server times: the wait is the same in this process' clock.
          this.quietUntil[shard] = Date.now() + (notBefore - serverNow);
          break;
        }
        const { expired } = await this.store.expire(shard, groups);
        groups.forEach((group, i) => {
          if (expired[i] > 0) this.onExpired(group, expired[i]);
        });
        if (groups.length < GROUPS_PER_CALL) break;
      }
      this.failures.succeeded();
    } catch (error) {
      // An outage is the connection's to report; a visit that meets one just comes again next round.
      if (!this.stopped && !(error instanceof QueueConnectionError)) this.failures.failed(describeError(error));
    }
  }
}
