import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';

/**
 * Numbers each game's events per queue, 1, 2, 3, ..., in the order they are pushed, so that the
 * upstream can check that they arrive in that order and that none goes missing unaccounted for.
 * Numbers live in this process: a run has an id of its own, and events left in Redis by an earlier
 * run (at-least-once keeps them) arrive under theirs, which the upstream does not hold to this run's order.
 */
@Injectable()
export class GameSequences {
  readonly run = randomBytes(4).toString('hex');
  private readonly last = new Map<string, number>();

  /** Reserves `count` numbers of a game's stream in `queue`; returns the first. */
  take(queue: string, game: string, count: number): number {
    const key = `${queue}\n${game}`;
    const first = (this.last.get(key) ?? 0) + 1;
    this.last.set(key, first + count - 1);
    return first;
  }
}
