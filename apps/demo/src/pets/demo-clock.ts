import { Injectable } from '@nestjs/common';
import { DemoConfig } from '../demo.config';

/** Converts between pet time (hours-long meals) and real time, at the configured scale. */
@Injectable()
export class DemoClock {
  constructor(private readonly config: DemoConfig) {}

  /**
   * Now, for the pets' rows, whose times become the meals' due times. The queues compare those with Redis'
   * clock: on one machine both read the system clock.
   */
  now(): number {
    return Date.now();
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
