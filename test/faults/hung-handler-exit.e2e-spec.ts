import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { compileLibrary, libraryEnv } from '@test/support/compile-library';
import { startRedis, type RedisServer } from '@test/support/faults';
import { uniquePrefix } from '@test/support/testing';

/** How long a closed process may take to exit: Node's own teardown on a busy machine. */
const EXIT_WITHIN_MS = 3000;

describe('a process whose scheduled handler never settles', () => {
  let server: RedisServer;
  let library: ReturnType<typeof compileLibrary>;

  beforeAll(async () => {
    server = await startRedis();
    library = compileLibrary();
  });
  afterAll(async () => {
    library.remove();
    await server.stop();
  });

  it('closes within shutdownTimeoutMs + commandTimeoutMs, then exits by itself', async () => {
    const child = spawn(process.execPath, [join(__dirname, 'hung-scheduled.js')], {
      env: { ...libraryEnv(library.dir), REDIS_URL: server.url, PREFIX: uniquePrefix() },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    let closedAt = 0;
    const exited = new Promise<{ code: number | null; afterCloseMs: number }>((resolve) =>
      child.on('exit', (code) => resolve({ code, afterCloseMs: Date.now() - closedAt })),
    );
    child.stdout.on('data', () => {
      if (!closedAt && output.includes('closed ')) closedAt = Date.now();
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const { code, afterCloseMs } = await exited;
    clearTimeout(killer);
    const closeMs = Number(/closed (\d+)/.exec(output)?.[1]);
    expect(code).toBe(0);
    expect(closeMs).toBeLessThan(200 + 1000);
    expect(afterCloseMs).toBeLessThan(EXIT_WITHIN_MS);
  });
});
