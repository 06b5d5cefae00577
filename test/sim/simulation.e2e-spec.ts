import IORedis from 'ioredis';
import { runSeed, report, STEPS, FULL_CAST, parseCast } from '../../sim/simulation';
import { replay, stateOf } from '../../sim/replay';
import { startRedis } from '@test/support/faults';

/**
 * The simulation (sim/, docs/development.md "Simulation") for SIM_SECONDS (60 by default) of seeds one
 * after the other from a seed drawn per run (printed), then a few seeds' histories replayed on a
 * redis-server of its own: the same commands in the same order, at the same script clock, must give
 * the same replies and end in the same keys and values as on the memory engine.
 */
const SECONDS = Number(process.env.SIM_SECONDS ?? 60);
const REPLAYED = [1, 2, 3];
/** Seeds that found a defect in the library, with their cast and what they found: each keeps every promise since its fix. */
const FOUND: [number, string, string][] = [
  [914449981, '2,2,1,2,1,2,2,2,2,2', "a retried push's try held past its call's window, applied a second time"],
];

jest.setTimeout((SECONDS + 120) * 1000);

describe('simulation', () => {
  it(`keeps every promise for ${SECONDS} s of seeds`, async () => {
    // The only wall-clock reads: when to stop, and where this run starts (printed on a failure).
    const started = Date.now();
    let seed = started % 1_000_000_000;
    const first = seed;
    let seeds = 0;
    do {
      const outcome = await runSeed(seed, FULL_CAST, STEPS);
      if (outcome.violation) throw new Error(`${report(outcome)}\n(first seed of this run: ${first})`);
      seeds++;
      seed++;
    } while (Date.now() - started < SECONDS * 1000);
    expect(seeds).toBeGreaterThan(0);
  });

  it.each(FOUND)('keeps every promise on seed %i (cast %s), which found %s', async (seed, cast) => {
    const outcome = await runSeed(seed, parseCast(cast), STEPS);
    expect(outcome.violation && report(outcome)).toBeUndefined();
  });

  it('ends a seed in the same history twice', async () => {
    const [a, b] = [await runSeed(7), await runSeed(7)];
    expect(a.history.join('\n')).toBe(b.history.join('\n'));
    expect(a.hash).toBe(b.hash);
  });

  it.each(REPLAYED)('replays seed %i on a redis-server to the same replies and state', async (seed) => {
    const outcome = await runSeed(seed, FULL_CAST, STEPS, true);
    // A server of its own: the histories hold FLUSHALL (the data losses they simulate).
    const server = await startRedis();
    const client = new IORedis(server.url, { maxRetriesPerRequest: 0 });
    try {
      expect(await replay(outcome.recorded, client)).toBeUndefined();
      const state = await stateOf((command) => client.call(String(command[0]), ...command.slice(1)));
      expect(state).toEqual(outcome.state);
      expect(state.length).toBeGreaterThan(0);
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
