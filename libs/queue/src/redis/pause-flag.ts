import type { QueueKeys } from './keys';
import type { Scripts } from './scripts';
import type { WakeHints } from './wake-hints';

/**
 * A queue's pause, as the claim scripts read it: the field `paused` of every shard's stats hash. Set
 * on every shard, because on a Cluster a shard's script sees only its own slot; lost with the data
 * when Redis restarts without persistence (the queue comes back unpaused and consumers work again).
 */
export class PauseFlag {
  constructor(
    private readonly scripts: Scripts,
    private readonly keys: QueueKeys,
    private readonly shards: number,
    private readonly hints: WakeHints,
  ) {}

  /**
   * Sets the flag on every shard (one command each: nothing to keep atomic across them) and resolves
   * once every shard's claims see it; lifting it wakes every shard's pollers in every process, so that
   * work that fell due meanwhile is handed out at once (only a latency hint: paused pollers still look
   * every idlePollMs).
   */
  async switch(paused: boolean): Promise<void> {
    await Promise.all(
      Array.from({ length: this.shards }, (_, shard) => {
        const key = this.keys.key(shard, 'stats');
        return this.scripts.call((client) => (paused ? client.hset(key, 'paused', '1') : client.hdel(key, 'paused')));
      }),
    );
    if (paused) return;
    for (let shard = 0; shard < this.shards; shard++) this.hints.now(shard);
  }

  /** True when any shard is paused (a pause() that failed half-way still holds those shards back). */
  async read(): Promise<boolean> {
    const shards = await Promise.all(
      Array.from({ length: this.shards }, (_, shard) =>
        this.scripts.call((client) => client.hexists(this.keys.key(shard, 'stats'), 'paused')),
      ),
    );
    return shards.some((paused) => paused === 1);
  }
}
