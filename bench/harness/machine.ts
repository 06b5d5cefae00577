import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { Servers } from './servers';
import { repoRoot } from './paths';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  redis: string;
  redisServer: string;
  bullmq: string;
  library: string;
  commit?: string;
}

function commit(): string | undefined {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], {
      cwd: repoRoot(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

export async function describeMachine(servers: Servers): Promise<Machine> {
  const server = await servers.open();
  try {
    const info = await server.info('server');
    return {
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.cpus().length,
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
      redis: info.get('redis_version') ?? 'unknown',
      redisServer: servers.external ? 'REDIS_URL, shared' : 'a fresh private server per measurement, no persistence',
      bullmq: (require('bullmq/package.json') as { version: string }).version,
      library: (require('nestjs-redis-queues/package.json') as { version: string }).version,
      commit: commit(),
    };
  } finally {
    await server.close();
  }
}
