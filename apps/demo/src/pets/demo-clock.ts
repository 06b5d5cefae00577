import { Injectable } from '@nestjs/common';
import { QueueClock } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';

/** Converts between pet time (hours-long meals) and real time, at the configured scale. */
@Injectable()
export class DemoClock {
  private readonly inMemory: boolean;

  constructor(
    private readonly config: DemoConfig,
    private readonly queues: QueueClock,
  ) {
    this.inMemory = /^memory:\/\//i.test(config.redisUrl) && !config.redisCluster;
  }

  /**
   * Now, for the pets' rows, whose times become the meals' due times: the queues' clock, which decides when
   * a meal ends. On memory:// that is the memory clock, which a test moves; on Redis it is the system clock,
   * which Redis' clock is on one machine, read here so that an owner's action is committed to its row while
   * Redis is away.
   */
  async now(): Promise<number> {
    return this.inMemory ? this.queues.now() : Date.now();
  }

  /** Real milliseconds that `demoMs` of pet time take (at least 1, so that order is kept). */
  real(demoMs: number): number {
    return Math.max(1, Math.round(demoMs / this.config.timeScale));
  }

  /** A real duration as pet time, for people: `3h 59m`. */
  format(realMs: number): string {
    const minutes = Math.round((Math.max(0, realMs) * this.config.timeScale) / 60_000);
    return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
  }
}
