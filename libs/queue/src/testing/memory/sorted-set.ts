/** A member and its score, ordered as Redis orders a sorted set: by score, then by member. */
export interface ScoredMember {
  score: number;
  member: string;
}

function before(a: ScoredMember, score: number, member: string): boolean {
  return a.score < score || (a.score === score && a.member < member);
}

/**
 * A Redis sorted set: a map for O(1) scores and an array kept in order for ranges. Inserting and
 * removing move part of the array (O(N)), which a test's sets of thousands of members never feel.
 */
export class SortedSet {
  private readonly scores = new Map<string, number>();
  private readonly ordered: ScoredMember[] = [];

  get size(): number {
    return this.ordered.length;
  }

  score(member: string): number | undefined {
    return this.scores.get(member);
  }

  /** Index of the first entry not before (score, member). */
  private position(score: number, member: string): number {
    let low = 0;
    let high = this.ordered.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (before(this.ordered[middle], score, member)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  set(member: string, score: number): void {
    this.remove(member);
    this.ordered.splice(this.position(score, member), 0, { score, member });
    this.scores.set(member, score);
  }

  remove(member: string): boolean {
    const score = this.scores.get(member);
    if (score === undefined) return false;
    this.ordered.splice(this.position(score, member), 1);
    this.scores.delete(member);
    return true;
  }

  /** Entries from index `start` to `stop` inclusive (already resolved to 0 ≤ start, stop < size). */
  slice(start: number, stop: number): ScoredMember[] {
    return this.ordered.slice(start, stop + 1);
  }

  /** Index of the first entry with a score at or above `min` (above, when `exclusive`). */
  firstAtOrAbove(min: number, exclusive: boolean): number {
    return this.countBelow(min, exclusive);
  }

  /** Index just past the last entry with a score at or below `max` (below, when `exclusive`). */
  pastAtOrBelow(max: number, exclusive: boolean): number {
    return this.countBelow(max, !exclusive);
  }

  /** How many entries score below `bound`, or at it too when `orAt` (a binary search: entries are by score). */
  private countBelow(bound: number, orAt: boolean): number {
    let low = 0;
    let high = this.ordered.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const score = this.ordered[middle].score;
      if (score < bound || (orAt && score === bound)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  entries(): readonly ScoredMember[] {
    return this.ordered;
  }
}
