import type IORedis from 'ioredis';
import { bullWorker, BULLMQ } from '../contenders/bullmq';
import { batchConsumer, delayConsumer, LIBRARY, libraryApp } from '../contenders/library';
import { QUEUE_DEFAULTS } from 'nestjs-redis-queues';
import { isSmoke, type BenchContext, type Scenario } from '../harness/context';
import { sleep } from '../harness/load';
import { Recorder, type MetricSpec } from '../harness/results';
import { commandStats, type BenchServer } from '../harness/servers';

const FIXED = `${LIBRARY} @BatchConsumer`;
const DELAY = `${LIBRARY} @DelayConsumer`;
const WORKER = `${BULLMQ} Worker`;
/** Start-up commands (script loads, subscriptions, version checks) are not idle cost. */
const SETTLE_MS = 1500;

const COMMANDS: MetricSpec = {
  label: 'commands/s, INFO commandstats (inside scripts too)',
  unit: 'cmd/s',
  better: 'lower',
};
const REQUESTS: MetricSpec = { label: 'requests/s from the client (MONITOR)', unit: 'cmd/s', better: 'lower' };

interface IdleContender {
  key: string;
  /** Starts one idle consumer against the server; resolves with its stop function. */
  start(server: BenchServer, prefix: string): Promise<() => Promise<void>>;
}

const contenders: IdleContender[] = [
  {
    key: FIXED,
    async start(server, prefix) {
      const app = await libraryApp({
        url: server.url,
        prefix,
        fixed: { name: 'events' },
        consumers: [batchConsumer('events', 16, () => undefined)],
      });
      return () => app.close();
    },
  },
  {
    key: DELAY,
    async start(server, prefix) {
      const app = await libraryApp({
        url: server.url,
        prefix,
        delay: { name: 'feeding' },
        consumers: [delayConsumer('feeding', 64, () => undefined)],
      });
      return () => app.close();
    },
  },
  {
    key: WORKER,
    async start(server, prefix) {
      const worker = await bullWorker(server.url, prefix, 'feeding', 64, () => undefined);
      return () => worker.close();
    },
  },
];

/** Counts what one server receives: INFO commandstats, and MONITOR to tell client requests from calls made by scripts. */
class CommandCounter {
  private requests = 0;
  private lastCalls = new Map<string, number>();

  private constructor(
    private readonly server: BenchServer,
    private readonly monitor: IORedis,
  ) {}

  static async attach(server: BenchServer): Promise<CommandCounter> {
    const monitor = await server.admin.monitor();
    const counter = new CommandCounter(server, monitor);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      // Our own INFO is not the consumer's; commands that scripts run show "lua" as their source.
      if (source !== 'lua' && args[0]?.toLowerCase() !== 'info') counter.requests++;
    });
    counter.lastCalls = await counter.calls();
    counter.requests = 0;
    return counter;
  }

  private async calls(): Promise<Map<string, number>> {
    const stats = commandStats(await this.server.info('commandstats'));
    return new Map([...stats].map(([name, { calls }]) => [name, calls]));
  }

  /** Commands and client requests since the previous call. */
  async take(): Promise<{ commands: number; requests: number; byCommand: Record<string, number> }> {
    const calls = await this.calls();
    const byCommand: Record<string, number> = {};
    let commands = 0;
    for (const [name, count] of calls) {
      // Each window sees exactly one INFO of ours (the one that ended the previous window), and MONITOR itself once.
      if (name === 'info' || name === 'monitor') continue;
      const delta = count - (this.lastCalls.get(name) ?? 0);
      if (delta > 0) {
        byCommand[name] = delta;
        commands += delta;
      }
    }
    this.lastCalls = calls;
    const requests = this.requests;
    this.requests = 0;
    return { commands, requests, byCommand };
  }

  close(): void {
    this.monitor.disconnect();
  }
}

export const idleScenario: Scenario = {
  name: 'idle',
  summary: 'Redis commands per second sent by one idle consumer of each kind, each alone on its server',
  async run(ctx: BenchContext) {
    // One idle poll period per window: a shorter one could fall between two polls of every shard.
    const windowMs = Math.max(1000, Math.round(QUEUE_DEFAULTS.module.idlePollMs * Math.min(1, ctx.scale)));
    const settleMs = isSmoke(ctx) ? 300 : SETTLE_MS;
    const recorder = new Recorder(
      'idle',
      `Idle cost: commands per second over ${windowMs / 1000} s windows, one idle consumer per server, default options`,
      {
        windowMs,
        settleMs,
      },
    );
    for (const { key } of contenders) recorder.contender(key, key);
    recorder
      .ratio(`${FIXED} / ${WORKER}: commands/s`, COMMANDS, FIXED, WORKER, { op: '<=', value: 0.99 })
      .ratio(`${DELAY} / ${WORKER}: commands/s`, COMMANDS, DELAY, WORKER, { op: '<=', value: 0.99 })
      .check(`${FIXED} commands/s`, COMMANDS, FIXED, { op: '<=', value: 1 })
      .check(`${DELAY} commands/s`, COMMANDS, DELAY, { op: '<=', value: 1 })
      .check(`${FIXED} requests/s`, REQUESTS, FIXED, { op: '<=', value: 1 })
      .check(`${DELAY} requests/s`, REQUESTS, DELAY, { op: '<=', value: 1 });

    const breakdown = new Map<string, Record<string, number>>();
    /** Measures `group` side by side: each contender has a server of its own, so none sees another's commands. */
    const measure = async (group: IdleContender[]) => {
      const running = await Promise.all(
        group.map(async (contender) => {
          const server = await ctx.servers.open();
          const stop = await contender.start(server, ctx.prefix('idle'));
          return { contender, server, stop };
        }),
      );
      try {
        await sleep(settleMs);
        const counters = await Promise.all(running.map(({ server }) => CommandCounter.attach(server)));
        for (let round = 1; round <= ctx.rounds; round++) {
          ctx.log(`  window ${round}/${ctx.rounds}: ${group.map((c) => c.key).join(', ')}`);
          await sleep(windowMs);
          const counts = await Promise.all(counters.map((counter) => counter.take()));
          counts.forEach(({ commands, requests, byCommand }, i) => {
            const { key } = running[i].contender;
            recorder.record(COMMANDS, key, (commands * 1000) / windowMs);
            recorder.record(REQUESTS, key, (requests * 1000) / windowMs);
            const total = breakdown.get(key) ?? {};
            for (const [name, count] of Object.entries(byCommand)) total[name] = (total[name] ?? 0) + count;
            breakdown.set(key, total);
          });
        }
        for (const counter of counters) counter.close();
      } finally {
        for (const { stop, server } of running) {
          await stop();
          await server.close();
        }
      }
    };

    if (ctx.servers.external) {
      // One shared server: each consumer must be measured alone.
      for (const contender of contenders) await measure([contender]);
      recorder.note('REDIS_URL names a shared server: anything else using it during a window is counted too.');
    } else {
      await measure(contenders);
    }
    for (const [key, byCommand] of breakdown) {
      const seconds = (ctx.rounds * windowMs) / 1000;
      const parts = Object.entries(byCommand)
        .sort((a, b) => b[1] - a[1])
        .map(([name, count]) => `${name} ${(count / seconds).toFixed(2)}`);
      recorder.note(`${key}, commands/s by command: ${parts.join(', ') || 'none'}.`);
    }
    return recorder.result();
  },
};
