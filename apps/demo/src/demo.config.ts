import {
  ArrayNotEmpty,
  IsBoolean,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  Max,
  Min,
  validateSync,
} from 'class-validator';
import type { ClusterNode } from 'ioredis';

/**
 * Everything the demo can be told. The defaults are what a person watching it wants.
 * Type checks come last: decorators register bottom-up, and validation stops at the first broken rule.
 */
export class DemoConfig {
  /** HTTP port of the demo API; 0 picks a free one. */
  @Min(0)
  @Max(65_535)
  @IsInt()
  port = 3000;

  @IsString()
  host = '127.0.0.1';

  @Matches(/^(rediss?:\/\/\S+|memory:\/\/\S*)$/, { message: 'redisUrl must be a redis://, rediss:// or memory:// URL' })
  redisUrl = 'redis://127.0.0.1:6379';

  /** A PostgreSQL server for the pets; without it they live in PGlite, in this process's memory. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'databaseUrl must be a postgres:// or postgresql:// URL' })
  databaseUrl?: string;

  /** `host:port` seeds of a Redis Cluster; when given, used instead of redisUrl. */
  @IsOptional()
  @ArrayNotEmpty()
  @Matches(/^[^\s:]+:\d{1,5}$/, { each: true, message: 'redisCluster must list host:port pairs' })
  redisCluster?: string[];

  /** Leads every key the demo writes, and names the PostgreSQL schema of its pets' table. */
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, { message: 'prefix must be 1-64 letters, digits, ".", "_" or "-"' })
  prefix = 'demo';

  /** Pet time per real time: 3600 plays a demo hour in a second. Game rules stay in real time. */
  @Min(1)
  @Max(1_000_000)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  timeScale = 3600;

  /** Events the built-in traffic simulator produces; 0 turns it off. */
  @Min(0)
  @Max(1_000_000)
  @IsInt()
  eventsPerSecond = 3000;

  /** Games the simulator spreads its events over, a few hot and many cold. */
  @Min(1)
  @Max(100_000)
  @IsInt()
  games = 500;

  /** How often the low-priority digest is reported. */
  @Min(10)
  @IsInt()
  digestIntervalMs = 4000;

  /** How often the reporting summary is logged; 0 turns it off. */
  @Min(0)
  @IsInt()
  summaryIntervalMs = 3000;

  /** Play the built-in pet story (plain meal, acceleration card, auto-feed card) at start-up. */
  @IsBoolean()
  petStory = true;

  /**
   * Pet hours of quiet after which an owner gets the digest of a pet's activity (feedings, cards): a burst
   * of activity gives one digest...
   */
  @Max(10_000)
  @IsPositive()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  petDigestQuietHours = 5;

  /** ...sent no later than this many pet hours after the first activity it sums up, quiet or not. */
  @Max(10_000)
  @IsPositive()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  petDigestMaxWaitHours = 7;

  /**
   * How often the pet-feeding queue is checked against the pets table (real time): a pass writes the meals
   * Redis lacks. Redis coming back empty runs one at once, whatever this says.
   */
  @Min(1000)
  @IsInt()
  petReconcileMs = 60_000;

  /**
   * The vet is closed for this long (real time) after start-up: the story's check-ups fail until then
   * and end up dead-lettered, for the dashboard's re-queue button. 0: open from the start.
   */
  @Min(0)
  @IsInt()
  vetClosedMs = 30_000;

  /**
   * The stand-in upstream refuses half of this game's reports, so that retries, duplicates and dead
   * letters show; a game nobody plays (such as `none`) turns it off.
   */
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'flakyGame must be a game name' })
  flakyGame = 'com.demo.game010';

  /**
   * The live queue holds a game whose batch the upstream refused on every attempt (onExhausted:
   * 'pause-group'); the demo resumes it after this long, as an operator would once its upstream is back.
   * 0: it stays held until resumed from the dashboard.
   */
  @Min(0)
  @IsInt()
  resumeHeldAfterMs = 10_000;

  /** Port of the stand-in upstream reporting service; 0 picks a free one. */
  @Min(0)
  @Max(65_535)
  @IsInt()
  upstreamPort = 0;

  /** Stop by itself after this many seconds. */
  @IsOptional()
  @IsPositive()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  durationS?: number;
}

type Parse = (text: string) => unknown;

const numeric: Parse = (value) => Number(value);
const text: Parse = (value) => value;
const seconds: Parse = (value) => Math.round(Number(value) * 1000);
const list: Parse = (value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
const flag: Parse = (value) => {
  const normal = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(normal)) return true;
  if (['0', 'false', 'no', 'off'].includes(normal)) return false;
  return value;
};

/** Where each setting comes from in the environment, and how its text becomes a value. */
const ENV: Record<keyof DemoConfig, [name: string, parse: Parse]> = {
  port: ['PORT', numeric],
  host: ['HOST', text],
  redisUrl: ['REDIS_URL', text],
  redisCluster: ['REDIS_CLUSTER', list],
  databaseUrl: ['DATABASE_URL', text],
  prefix: ['DEMO_PREFIX', text],
  timeScale: ['DEMO_TIME_SCALE', numeric],
  eventsPerSecond: ['DEMO_EVENTS_PER_S', numeric],
  games: ['DEMO_GAMES', numeric],
  digestIntervalMs: ['DEMO_DIGEST_EVERY_S', seconds],
  summaryIntervalMs: ['DEMO_SUMMARY_EVERY_S', seconds],
  petStory: ['DEMO_PET_STORY', flag],
  petDigestQuietHours: ['DEMO_PET_DIGEST_QUIET_H', numeric],
  petDigestMaxWaitHours: ['DEMO_PET_DIGEST_MAX_WAIT_H', numeric],
  petReconcileMs: ['DEMO_PET_RECONCILE_S', seconds],
  vetClosedMs: ['DEMO_VET_CLOSED_S', seconds],
  flakyGame: ['DEMO_FLAKY_GAME', text],
  resumeHeldAfterMs: ['DEMO_RESUME_HELD_S', seconds],
  upstreamPort: ['DEMO_UPSTREAM_PORT', numeric],
  durationS: ['DEMO_DURATION_S', numeric],
};

/** Applies defaults and checks every setting, naming each broken one as the caller spelled it. */
export function resolveDemoConfig(
  values: Partial<DemoConfig> = {},
  source: (key: string) => string = (key) => key,
): DemoConfig {
  const given = Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
  const config = Object.assign(new DemoConfig(), given);
  const errors = validateSync(config, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
  if (errors.length > 0) {
    const problems = errors.map(
      (error) => `${source(error.property)}: ${Object.values(error.constraints ?? {}).join(', ')}`,
    );
    throw new Error(`Invalid demo configuration: ${problems.join('; ')}`);
  }
  return config;
}

/** Reads the configuration from environment variables (empty means unset). */
export function loadDemoConfig(env: NodeJS.ProcessEnv): DemoConfig {
  const values: Record<string, unknown> = {};
  for (const [key, [name, parse]] of Object.entries(ENV)) {
    const raw = env[name];
    if (raw !== undefined && raw.trim() !== '') values[key] = parse(raw);
  }
  return resolveDemoConfig(values, (key) => {
    const name = ENV[key as keyof DemoConfig]?.[0];
    return name ? `${name}=${JSON.stringify(env[name])}` : key;
  });
}

export function clusterNodes(config: DemoConfig): ClusterNode[] | undefined {
  return config.redisCluster?.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}
