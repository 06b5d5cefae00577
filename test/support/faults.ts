import { createApp } from './testing';
import type { INestApplication, LoggerService, ModuleMetadata } from '@nestjs/common';

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  pid: number;
  exited: Promise<{ code: number | null; signal: string | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  port?: number;
  appendonly?: boolean;
  extraArgs?: string[];
  dir?: string;
}

export interface LocalCluster {
  nodes: { host: string; port: number }[];
  masters: { host: string; port: number }[];
  stop(): Promise<void>;
  kill(port: number): Promise<void>;
}

// The server helpers are plain JavaScript shared with the command line.
const redisScripts = require('../../scripts/redis') as {
  startRedis(options?: RedisServerOptions): Promise<RedisServer>;
  freePort(): Promise<number>;
};
const clusterScripts = require('../../scripts/cluster') as { startCluster(): Promise<LocalCluster> };

export const startRedis = redisScripts.startRedis;
export const freePort = redisScripts.freePort;
export const startCluster = clusterScripts.startCluster;

/** A logger that keeps every line, so a test can assert what an operator would read. */
export class CapturedLogs implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];

  log(message: unknown) {
    this.add('log', message);
  }
  error(message: unknown) {
    this.add('error', message);
  }
  warn(message: unknown) {
    this.add('warn', message);
  }
  debug(message: unknown) {
    this.add('debug', message);
  }
  verbose(message: unknown) {
    this.add('verbose', message);
  }

  /** Lines of that level matching `pattern`. */
  find(level: string, pattern: RegExp): string[] {
    return this.lines.filter((line) => line.level === level && pattern.test(line.message)).map((line) => line.message);
  }

  private add(level: string, message: unknown) {
    this.lines.push({ level, message: String(message) });
  }
}

/** Like `createApp`, but logging into `logs`, so start-up and reconnection messages can be checked. */
export function createLoggedApp(metadata: ModuleMetadata, logs: CapturedLogs): Promise<INestApplication> {
  return createApp(metadata, logs);
}

/** Resolves with how long `work` took to settle, and how it settled. */
export async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = Date.now();
  try {
    const value = await work;
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}
