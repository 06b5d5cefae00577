import { join, relative } from 'node:path';
import { recordCurrent, unrecordable } from './harness/current';
import { positiveEnv } from './harness/env';
import { repoRoot } from './harness/paths';
import { runBench, SCENARIOS } from './suite';

const USAGE = `usage: npm run bench [-- [--record] <scenario>...]
--record: a full run (every scenario, BENCH_SCALE=1) then becomes BENCHMARKS.md's current figures
scenarios: ${SCENARIOS.map((s) => `\n  ${s.name.padEnd(8)} ${s.summary}`).join('')}
environment: BENCH_SCALE (default 1) multiplies every size; BENCH_ROUNDS (default 3) measured rounds;
             REDIS_URL uses that server instead of fresh private ones`;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('-h') || args.includes('--help')) {
    console.log(USAGE);
    return;
  }
  const record = args.includes('--record');
  const only = args.filter((arg) => arg !== '--record');
  // Refused before the run rather than after it: a full run takes minutes.
  if (record && only.length > 0) throw new Error('--record needs every scenario: name none');
  const { report, markdown, jsonPath } = await runBench({
    scale: positiveEnv('BENCH_SCALE', 1),
    rounds: positiveEnv('BENCH_ROUNDS', 3),
    only,
    redisUrl: process.env.REDIS_URL || undefined,
    // Progress goes to stderr so that stdout is the Markdown table alone.
    log: (line) => console.error(line),
  });
  console.log(markdown);
  console.error(`results: ${relative(process.cwd(), jsonPath)}`);
  if (record) {
    const refused = unrecordable(
      report,
      SCENARIOS.map((s) => s.name),
    );
    if (refused) throw new Error(refused);
    recordCurrent(join(repoRoot(), 'BENCHMARKS.md'), report);
    console.error('BENCHMARKS.md: current figures replaced by this run');
  }
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
