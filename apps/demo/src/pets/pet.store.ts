import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import IORedis, { Cluster } from 'ioredis';
import { createMemoryClient } from 'nestjs-redis-queues';
import { clusterNodes, DemoConfig } from '../demo.config';

export interface Pet {
  id: string;
  /** Meals started so far; the current (or last) meal's number. */
  meals: number;
  eating: boolean;
  mealStartedAt: number;
  fedBy: 'owner' | 'auto-feed';
  hungrySince: number | null;
  autoFeedCards: number;
  autoFed: number;
  accelerated: number;
  /** Activity digests sent so far, and the last of them. */
  digests: number;
  lastDigest: Digest | null;
}

/** What an activity digest sums up (Redis times in ms). */
export interface Digest {
  fed: number;
  accelerated: number;
  autoFeedCards: number;
  autoFed: number;
  firstAt: number;
  lastAt: number;
  dueAt: number;
  sentAt: number;
}

/** What the digest counts: an owner's feeding, a card played or taken, a feeding by the auto-feed card. */
export type Activity = 'fed' | 'accelerated' | 'autoFeedCards' | 'autoFed';

export type MealEnd =
  /** The meal that began at `startedAt` ended at `at`, and the pet is hungry. */
  | { outcome: 'hungry'; at: number; startedAt: number }
  /** The meal ended, an auto-feed card was used, and the next meal began at `at`. */
  | { outcome: 'auto-fed'; at: number }
  /** A repeated delivery of a meal that already auto-fed the pet; the next meal began at `at`. */
  | { outcome: 'auto-fed-before'; at: number }
  /** A delivery for a meal that is over: nothing to do. */
  | { outcome: 'stale' };

export type CardOutcome = 'ok' | 'missing' | 'not-eating' | 'held';

// Every change is one script on the pet's hash, timed by Redis (the clock the task times come from),
// so a handler that runs twice, or races a request, never half-applies a change.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Returns {meal, startedAt}, or {0, current meal} when the pet is already eating. */
const START_MEAL = `${NOW}
if redis.call('HGET', KEYS[1], 'eating') == '1' then return {0, tonumber(redis.call('HGET', KEYS[1], 'meals'))} end
local meal = redis.call('HINCRBY', KEYS[1], 'meals', 1)
redis.call('HSET', KEYS[1], 'eating', '1', 'mealStartedAt', now, 'fedBy', 'owner')
return {meal, now}`;

/** Undoes START_MEAL for meal ARGV[1] when its task could not be scheduled. */
const ABORT_MEAL = `
if redis.call('HGET', KEYS[1], 'eating') ~= '1' or redis.call('HGET', KEYS[1], 'meals') ~= ARGV[1] then return 0 end
if ARGV[1] == '1' then return redis.call('DEL', KEYS[1]) end
redis.call('HINCRBY', KEYS[1], 'meals', -1)
redis.call('HSET', KEYS[1], 'eating', '0')
return 1`;

/** Ends meal ARGV[1]; see MealEnd. */
const FINISH_MEAL = `${NOW}
local meal = tonumber(ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'meals') or '0')
local eating = redis.call('HGET', KEYS[1], 'eating') == '1'
if current == meal and eating then
  if tonumber(redis.call('HGET', KEYS[1], 'autoFeedCards') or '0') > 0 then
    redis.call('HINCRBY', KEYS[1], 'autoFeedCards', -1)
    redis.call('HINCRBY', KEYS[1], 'autoFed', 1)
    redis.call('HSET', KEYS[1], 'meals', meal + 1, 'mealStartedAt', now, 'fedBy', 'auto-feed')
    return {'auto-fed', now}
  end
  redis.call('HSET', KEYS[1], 'eating', '0', 'hungrySince', now)
  return {'hungry', now, tonumber(redis.call('HGET', KEYS[1], 'mealStartedAt'))}
end
if current == meal + 1 and eating and redis.call('HGET', KEYS[1], 'fedBy') == 'auto-feed' then
  return {'auto-fed-before', tonumber(redis.call('HGET', KEYS[1], 'mealStartedAt'))}
end
return {'stale'}`;

/** A pet holds at most one auto-feed card, and only for a meal under way. */
const ARM_AUTO_FEED = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HGET', KEYS[1], 'eating') ~= '1' then return 'not-eating' end
if tonumber(redis.call('HGET', KEYS[1], 'autoFeedCards') or '0') > 0 then return 'held' end
redis.call('HSET', KEYS[1], 'autoFeedCards', 1)
return 'ok'`;

const ACTIVITY_FIELDS = ['firstAt', 'lastAt', 'fed', 'accelerated', 'autoFeedCards', 'autoFed']
  .map((field) => `'activity:${field}'`)
  .join(', ');

/** Counts activity ARGV[1] towards the next digest of a pet that exists. */
const NOTE_ACTIVITY = `${NOW}
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'activity:' .. ARGV[1], 1)
redis.call('HSETNX', KEYS[1], 'activity:firstAt', now)
redis.call('HSET', KEYS[1], 'activity:lastAt', now)
return 1`;

/**
 * Turns the activity counted so far into the pet's last digest (due at ARGV[1]) and starts counting
 * afresh; nil when there is none (a repeated delivery of a digest already sent).
 */
const TAKE_DIGEST = `${NOW}
local a = redis.call('HMGET', KEYS[1], ${ACTIVITY_FIELDS})
if not a[1] then return false end
local digest = cjson.encode({
  firstAt = tonumber(a[1]), lastAt = tonumber(a[2]), fed = tonumber(a[3] or '0'), accelerated = tonumber(a[4] or '0'),
  autoFeedCards = tonumber(a[5] or '0'), autoFed = tonumber(a[6] or '0'), dueAt = tonumber(ARGV[1]), sentAt = now
})
redis.call('HDEL', KEYS[1], ${ACTIVITY_FIELDS})
redis.call('HSET', KEYS[1], 'lastDigest', digest)
redis.call('HINCRBY', KEYS[1], 'digests', 1)
return digest`;

/** Pets' state: one Redis hash per pet, under the demo's prefix, on a connection of its own. */
@Injectable()
export class PetStore implements OnApplicationShutdown {
  private readonly logger = new Logger('PetStore');
  private readonly redis: IORedis | Cluster;

  constructor(private readonly config: DemoConfig) {
    const nodes = clusterNodes(config);
    // Lazy, as the queues' connection: an application that fails to start leaves no socket open.
    this.redis = nodes
      ? new Cluster(nodes, { lazyConnect: true })
      : /^memory:\/\//i.test(config.redisUrl)
        ? createMemoryClient(config.redisUrl, { lazyConnect: true })
        : new IORedis(config.redisUrl, { lazyConnect: true });
    this.redis.on('error', (error: Error) => this.logger.warn(`Redis: ${error.message}`));
  }

  async get(id: string): Promise<Pet | null> {
    const hash = await this.redis.hgetall(this.key(id));
    if (!hash.meals) return null;
    return {
      id,
      meals: Number(hash.meals),
      eating: hash.eating === '1',
      mealStartedAt: Number(hash.mealStartedAt),
      fedBy: hash.fedBy === 'auto-feed' ? 'auto-feed' : 'owner',
      hungrySince: hash.hungrySince ? Number(hash.hungrySince) : null,
      autoFeedCards: Number(hash.autoFeedCards ?? 0),
      autoFed: Number(hash.autoFed ?? 0),
      accelerated: Number(hash.accelerated ?? 0),
      digests: Number(hash.digests ?? 0),
      lastDigest: hash.lastDigest ? (JSON.parse(hash.lastDigest) as Digest) : null,
    };
  }

  /** Starts the next meal: its number and start time, or null when the pet is eating already. */
  async startMeal(id: string): Promise<{ meal: number; startedAt: number } | null> {
    const [meal, startedAt] = (await this.redis.eval(START_MEAL, 1, this.key(id))) as [number, number];
    return meal === 0 ? null : { meal, startedAt };
  }

  async abortMeal(id: string, meal: number): Promise<void> {
    await this.redis.eval(ABORT_MEAL, 1, this.key(id), meal);
  }

  async finishMeal(id: string, meal: number): Promise<MealEnd> {
    const [outcome, at, startedAt] = (await this.redis.eval(FINISH_MEAL, 1, this.key(id), meal)) as [
      MealEnd['outcome'],
      number,
      number,
    ];
    if (outcome === 'hungry') return { outcome, at, startedAt };
    return outcome === 'stale' ? { outcome } : { outcome, at };
  }

  armAutoFeed(id: string): Promise<CardOutcome> {
    return this.redis.eval(ARM_AUTO_FEED, 1, this.key(id)) as Promise<CardOutcome>;
  }

  async countAcceleration(id: string): Promise<void> {
    await this.redis.hincrby(this.key(id), 'accelerated', 1);
  }

  async noteActivity(id: string, activity: Activity): Promise<void> {
    await this.redis.eval(NOTE_ACTIVITY, 1, this.key(id), activity);
  }

  /** The digest of the activity since the last one, now sent; null when there was none. */
  async takeDigest(id: string, dueAt: number): Promise<Digest | null> {
    const digest = (await this.redis.eval(TAKE_DIGEST, 1, this.key(id), dueAt)) as string | null;
    return digest === null ? null : (JSON.parse(digest) as Digest);
  }

  async remove(id: string): Promise<void> {
    await this.redis.del(this.key(id));
  }

  // After the queues' beforeApplicationShutdown: the feeding handler no longer runs.
  async onApplicationShutdown(): Promise<void> {
    if (this.redis.status === 'wait' || this.redis.status === 'end') {
      this.redis.disconnect();
      return;
    }
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private key(id: string): string {
    return `${this.config.prefix}:pet:${id}`;
  }
}
