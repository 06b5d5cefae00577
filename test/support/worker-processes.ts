import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { compileLibrary, libraryEnv } from './compile-library';
import { redisUrl } from './testing';

/**
 * Child processes running the library, for tests where separate processes are the point: the scripts
 * of test/faults (plain Node) on a private build of the library made once for the suite. Whatever is
 * still running after a test is killed.
 */
export function useWorkerProcesses() {
  let library: ReturnType<typeof compileLibrary>;
  const children = new Set<ChildProcess>();

  beforeAll(() => {
    library = compileLibrary();
  });
  afterEach(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  afterAll(() => library.remove());

  return {
    /** What a worker needs to load the library and reach the test Redis, with `extra` laid over it. */
    env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
      return { ...libraryEnv(library.dir), REDIS_URL: redisUrl(), ...extra };
    },

    /** Starts test/faults/`script`; resolves once it is ready (it prints a line then). */
    spawn(script: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
      const child = spawn(process.execPath, [join(__dirname, '../faults', script)], {
        env,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      children.add(child);
      child.once('exit', () => children.delete(child));
      return new Promise((resolve, reject) => {
        child.stdout!.once('data', () => resolve(child));
        child.once('exit', (code, signal) =>
          reject(new Error(`worker exited before it was ready (${signal ?? code})`)),
        );
      });
    },

    /** Sends `signal`; resolves once the process exited. */
    stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
      return new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill(signal);
      });
    },
  };
}
