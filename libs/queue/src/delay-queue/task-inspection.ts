import { badListState, badRepeatsCursor } from './delay-queue.messages';
import type {
  DeadTask,
  ListedTask,
  Page,
  PageOptions,
  RepeatInfo,
  TaskInfo,
  TaskListState,
  UpcomingTask,
} from '../interfaces';
import { newestOfShards } from '../redis/newest-first';
import { ScorePages } from '../redis/score-pages';
import { storedJson } from '../redis/traced-json';
import { byShard } from '../utils/by-shard';
import { DEAD_LETTERS_PER_CHUNK, type DelayQueueStore, type StoredTask } from './delay-queue.store';

/** The sorted set each listed state is read from. */
const LISTED: Record<TaskListState, 'due' | 'active' | 'dead'> = { scheduled: 'due', active: 'active', dead: 'dead' };

/**
 * The reads of a DelayQueue an admin makes (lists, dead letters, repeats, the next tasks due), and its
 * calls over every dead letter; their arguments checked by DelayQueue. Each costs what its DelayQueue
 * method says, whatever the number of tasks.
 */
export class TaskInspection<T> {
  constructor(
    private readonly store: DelayQueueStore,
    private readonly shards: number,
  ) {}

  async get(shard: number, id: string): Promise<(TaskInfo<T> & { lastError?: string }) | null> {
    const task = await this.store.get(shard, id);
    return task && this.toInfo(id, task);
  }

  async deadLetters(limit: number): Promise<DeadTask<T>[]> {
    const newest = await newestOfShards(this.shards, limit, (shard) => this.store.dead(shard, limit));
    return newest.map((task) => ({ ...this.toInfo(task.id, task), diedAt: task.diedAt }));
  }

  async list(state: TaskListState, { cursor, limit = 100 }: PageOptions): Promise<Page<ListedTask<T>>> {
    const kind = Object.hasOwn(LISTED, state) ? LISTED[state] : undefined;
    if (kind === undefined) throw badListState(state);
    const pages = new ScorePages(this.shards, state === 'dead');
    const page = await pages.page(cursor, limit, (shard, score, skip, count) =>
      this.store.range(shard, kind, state === 'dead', score, skip, count),
    );
    const details = new Map<string, Awaited<ReturnType<DelayQueueStore['details']>>[number]>();
    await Promise.all(
      [...byShard(page.items)].map(async ([shard, listed]) => {
        const ids = listed.map(({ member }) => member);
        for (const detail of await this.store.details(shard, ids)) details.set(`${shard}:${detail.id}`, detail);
      }),
    );
    const items: ListedTask<T>[] = [];
    for (const { shard, member, score } of page.items) {
      const { json, run, lastError } = details.get(`${shard}:${member}`)!;
      // Completed or cancelled between the two reads.
      if (json === null) continue;
      // '<attempts>:<token>:<runAt>' of the latest delivery; none before the first.
      const [attempts, , ranAt] = (run ?? '0::').split(':');
      items.push({
        id: member,
        state,
        runAt: state === 'scheduled' ? score : Number(ranAt),
        attempts: Number(attempts),
        payload: JSON.parse(storedJson(json)) as T,
        ...(state === 'active' && { leaseEndsAt: score }),
        ...(state === 'dead' && { diedAt: score }),
        ...(lastError !== null && { lastError }),
      });
    }
    return { items, cursor: page.cursor };
  }

  async repeats({ cursor = '0:0', limit = 100 }: PageOptions): Promise<Page<RepeatInfo>> {
    const at = typeof cursor === 'string' ? /^(\d+):(\d+)$/.exec(cursor) : null;
    if (at === null || Number(at[1]) >= this.shards) throw badRepeatsCursor(cursor);
    let shard = Number(at[1]);
    let scan = at[2];
    const items: RepeatInfo[] = [];
    while (items.length < limit) {
      const step = await this.store.scanRepeats(shard, scan, limit - items.length);
      items.push(...step.repeats);
      scan = step.cursor;
      if (scan !== '0') continue;
      shard += 1;
      if (shard === this.shards) return { items, cursor: null };
    }
    return { items, cursor: `${shard}:${scan}` };
  }

  async upcoming(limit: number): Promise<UpcomingTask[]> {
    const heads = await this.store.dueHeads(limit);
    return heads.sort((a, b) => a.runAt - b.runAt).slice(0, limit);
  }

  /**
   * Runs `chunk` on every shard at once, again on a shard until it handles fewer than
   * DEAD_LETTERS_PER_CHUNK (Redis serves others between two calls); resolves with how many it handled.
   */
  async everyDeadLetter(chunk: (shard: number, handledBefore: number) => Promise<number>): Promise<number> {
    const counts = await Promise.all(
      Array.from({ length: this.shards }, async (_, shard) => {
        let total = 0;
        for (;;) {
          const handled = await chunk(shard, total);
          total += handled;
          if (handled < DEAD_LETTERS_PER_CHUNK) return total;
        }
      }),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  private toInfo(id: string, task: StoredTask): TaskInfo<T> & { lastError?: string } {
    return {
      id,
      state: task.state,
      runAt: task.runAt,
      attempts: task.attempts,
      payload: JSON.parse(storedJson(task.json)) as T,
      ...(task.lastError !== undefined ? { lastError: task.lastError } : {}),
    };
  }
}
