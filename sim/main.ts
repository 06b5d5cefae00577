import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FULL_CAST, parseCast, report, runSeed, shrink, castText } from './simulation';
import { previousRelease } from './previous';

const USAGE = `usage: npm run simulate -- [--seconds N] [--seed S] [--cast a,b,c,d,e,f,g,h,i,j]
  --seconds N  explore seeds one after the other for N seconds of wall time (default 60)
  --seed S     run seed S alone, exactly as a failure printed it (with its --cast), and print its history
  --first S    the first seed explored (default: from the time: every run explores new seeds)
  --cast       producers and consumers of the at-least-once, at-most-once, unordered and delay queues, then the
               task-source queue's producers and the @Recurring declarers (default ${castText(FULL_CAST)})
  --no-shrink  print a failure as found, without looking for a smaller cast
  --profile    writes a CPU profile of the run to test-artifacts/profiles`;

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args[at + 1];
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('-h') || args.includes('--help')) {
    console.log(USAGE);
    return 0;
  }
  const cast = option(args, '--cast') ? parseCast(option(args, '--cast')!) : FULL_CAST;
  const seedText = option(args, '--seed');
  if (seedText !== undefined) {
    const outcome = await runSeed(Number(seedText), cast);
    const file = writeHistory(outcome.seed, outcome.history);
    console.log(
      `seed ${outcome.seed}: ${outcome.steps} steps, ${outcome.scriptCalls} script calls, history ${outcome.hash} (${file})`,
    );
    for (const line of outcome.summary) console.log(`  ${line}`);
    if (!outcome.violation) return 0;
    console.log(report(outcome));
    return 1;
  }
  const seconds = Number(option(args, '--seconds') ?? 60);
  // Unpacked before the exploration's time starts: its figures are the seeds'.
  previousRelease();
  // The only wall-clock reads: how long to explore, and which seeds a run starts from (printed).
  const started = Date.now();
  const cpu = process.cpuUsage();
  let seed = Number(option(args, '--first') ?? started % 1_000_000_000);
  console.log(`exploring for ${seconds} s from seed ${seed}`);
  let seeds = 0;
  let steps = 0;
  let calls = 0;
  let simulatedMs = 0;
  while (Date.now() - started < seconds * 1000) {
    const outcome = await runSeed(seed, cast);
    seeds++;
    steps += outcome.steps;
    calls += outcome.scriptCalls;
    simulatedMs += outcome.simulatedMs;
    if (outcome.violation) {
      console.log(
        `seed ${seed} broke ${outcome.violation.invariant} after ${seeds} seeds, ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      const smallest = args.includes('--no-shrink') ? outcome : await shrink(outcome);
      const file = writeHistory(seed, smallest.history);
      console.log(report(smallest));
      console.log(`full history: ${file}`);
      return 1;
    }
    seed++;
  }
  const wallS = (Date.now() - started) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  const cpuS = (user + system) / 1e6;
  console.log(
    `${seeds} seeds, ${steps} steps, ${calls} script calls in ${wallS.toFixed(1)} s: ` +
      `${Math.round((seeds / wallS) * 60)} seeds/min, ${Math.round((steps / wallS) * 60)} steps/min, ` +
      `${Math.round(calls / wallS)} script calls per second of wall time (${Math.round(calls / cpuS)} per CPU second), ` +
      `${Math.round(calls / (simulatedMs / 1000))} per simulated second; no promise broken`,
  );
  return 0;
}

function writeHistory(seed: number, history: string[]): string {
  const dir = join(__dirname, '..', 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `sim-${seed}.txt`);
  writeFileSync(file, history.join('\n') + '\n');
  return file;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
