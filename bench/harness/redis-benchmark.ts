import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

export function findRedisBenchmark(): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const candidate = join(dir, 'redis-benchmark');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return null;
}

/** Runs one redis-benchmark command test against the server of `url` and returns its requests per second. */
export async function redisBenchmark(binary: string, url: string, args: string[]): Promise<number> {
  const { hostname, port, username, password } = new URL(url);
  const auth = [
    ...(username ? ['--user', decodeURIComponent(username)] : []),
    ...(password ? ['-a', decodeURIComponent(password)] : []),
  ];
  const { stdout } = await promisify(execFile)(
    binary,
    ['-h', hostname, '-p', port || '6379', ...auth, '-q', '--csv', ...args],
    {
      maxBuffer: 1 << 20,
    },
  );
  // The test name may itself hold quotes and commas: the figures are the last seven fields of the line.
  const match = /"([\d.]+|inf)"(?:,"[\d.]+"){6}\s*$/.exec(stdout.trim());
  if (!match) throw new Error(`unexpected redis-benchmark output: ${stdout.slice(-300)}`);
  if (match[1] === 'inf') throw new Error('redis-benchmark finished within a millisecond: give it more requests');
  return Number(match[1]);
}
