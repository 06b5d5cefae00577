import { relative } from 'node:path';
import { positiveEnv } from './harness/env';
import { runBench, SCENARIOS } from './suite';

const USAGE = `usage: npm run bench [-- <scenario>...]
scenarios: ${SCENARIOS.map((s) => `\n  ${s.name.padEnd(8)} ${s.summary}`).join('')}
environment: BENCH_SCALE (default 1) multiplies every size; BENCH_ROUNDS (default 3) measured rounds;
             REDIS_URL uses that server instead of fresh private ones`;

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  if (only.includes('-h') || only.includes('--help')) {
    console.log(USAGE);
    return;
  }
  const { markdown, jsonPath } = await runBench({
    scale: positiveEnv('BENCH_SCALE', 1),
    rounds: positiveEnv('BENCH_ROUNDS', 3),
    only,
    redisUrl: process.env.REDIS_URL || undefined,
    // Progress goes to stderr so that stdout is the Markdown table alone.
    log: (line) => console.error(line),
  });
  console.log(markdown);
  console.error(`results: ${relative(process.cwd(), jsonPath)}`);
}

main().then(
  // Clients a library keeps (timers, sockets) must not hold the process once the report is out.
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    console.error(USAGE);
    process.exit(1);
  },
);
