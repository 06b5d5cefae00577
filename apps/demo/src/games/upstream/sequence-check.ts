/** What one arriving event is to its stream. */
export type Arrival = 'next' | 'after-gap' | 'duplicate' | 'requeued' | 'out-of-order';

/** Counts the queue gave for events that will never arrive, so that a gap can be told from a loss. */
export interface Losses {
  /** Evicted at capacity (drop-oldest). */
  dropped?: number;
  /** Discarded by the queue as older than maxAgeMs. */
  expired?: number;
  /** Left out by the reporter as having happened more than 3 minutes ago. */
  tooOld?: number;
  /** Numbered, but the push that carried them failed. */
  notQueued?: number;
}

export interface StreamCounts {
  /** Distinct events received. */
  received: number;
  /** Events received again (an at-least-once redelivery of a report that had arrived). */
  duplicates: number;
  /** Numbers skipped so far: events that have not arrived while later ones did. */
  missing: number;
  /** Of those, events the queue dead-lettered; they arrive late, in any order, if re-queued. */
  dead: number;
  /** Missing events that no count of dropped, expired, too old, not queued or dead accounts for. */
  unexplained: number;
  /** Events that arrived after a later one of the same stream, without having been dead-lettered. */
  outOfOrder: number;
  /** Dead-lettered events that arrived after all (re-queued). */
  requeued: number;
}

/**
 * Checks one stream of numbered events (one game's events of one kind, numbered 1, 2, 3, ... by their
 * producer) as it arrives: in order, each once, and none missing unless the queue said why.
 *
 * An ordered at-least-once queue hands a group's events over in push order, so a number lower than one
 * already seen is either a duplicate (a redelivered report that had arrived: allowed, counted) or a
 * violation; the exception is a dead-lettered event, which a person may re-queue at any time. Losses
 * are only counts (the queue does not say which events it evicted or expired), so the check is that
 * the skipped numbers never outnumber them; dead letters are known one by one.
 */
export class SequenceCheck {
  /** The next number expected: every lower one has arrived or is missing. */
  private next = 1;
  /** Missing numbers below `next`, as inclusive [from, to] ranges in ascending order. */
  private readonly gaps: [number, number][] = [];
  /** Dead-lettered numbers that have not arrived (yet). */
  private readonly deadLetters = new Set<number>();
  private losses = 0;
  private readonly counts = { received: 0, duplicates: 0, missing: 0, outOfOrder: 0, requeued: 0 };

  receive(seq: number): Arrival {
    if (seq === this.next) {
      this.next += 1;
      this.arrived(seq);
      return 'next';
    }
    if (seq > this.next) {
      this.gaps.push([this.next, seq - 1]);
      this.counts.missing += seq - this.next;
      this.next = seq + 1;
      this.arrived(seq);
      return 'after-gap';
    }
    if (!this.fill(seq)) {
      this.counts.duplicates += 1;
      this.deadLetters.delete(seq);
      return 'duplicate';
    }
    const wasDead = this.deadLetters.has(seq);
    this.arrived(seq);
    if (wasDead) {
      this.counts.requeued += 1;
      return 'requeued';
    }
    this.counts.outOfOrder += 1;
    return 'out-of-order';
  }

  /** The queue dead-lettered these events: a gap holding them is explained, and they may come back. */
  dead(seqs: Iterable<number>): void {
    for (const seq of seqs) this.deadLetters.add(seq);
  }

  lost(losses: Losses): void {
    this.losses += (losses.dropped ?? 0) + (losses.expired ?? 0) + (losses.tooOld ?? 0) + (losses.notQueued ?? 0);
  }

  snapshot(): StreamCounts {
    const dead = [...this.deadLetters].filter((seq) => this.isMissing(seq)).length;
    const unexplained = Math.max(0, this.counts.missing - dead - this.losses);
    return { ...this.counts, dead, unexplained };
  }

  private arrived(seq: number): void {
    this.counts.received += 1;
    this.deadLetters.delete(seq);
  }

  /** Takes `seq` out of the gaps; false when it was not missing (it had arrived). */
  private fill(seq: number): boolean {
    const index = this.gapIndex(seq);
    if (index < 0) return false;
    const [from, to] = this.gaps[index];
    const rest: [number, number][] = [];
    if (from < seq) rest.push([from, seq - 1]);
    if (seq < to) rest.push([seq + 1, to]);
    this.gaps.splice(index, 1, ...rest);
    this.counts.missing -= 1;
    return true;
  }

  private isMissing(seq: number): boolean {
    return this.gapIndex(seq) >= 0;
  }

  private gapIndex(seq: number): number {
    let lo = 0;
    let hi = this.gaps.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [from, to] = this.gaps[mid];
      if (seq < from) hi = mid - 1;
      else if (seq > to) lo = mid + 1;
      else return mid;
    }
    return -1;
  }
}
