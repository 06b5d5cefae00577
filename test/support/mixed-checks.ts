import type { LogEntry } from './mixed-versions';

/*
 * What the mixed-version suite checks in a history: the log of test/mixed/mixed-worker.js, in the order
 * Redis appended it (one list, so one total order across processes). Each function returns the broken
 * promises it finds, as sentences; an empty list means the history keeps them.
 */

const keyOf = (entry: LogEntry) => `${entry.q}|${entry.group ?? entry.id}`;
const runOf = (entry: LogEntry) => `${entry.pid}|${entry.attempt}|${entry.seqs?.join(',') ?? entry.occurrence ?? ''}`;

/** One delivery of a group (ordered queues) or of a task id at a time, across every process and version. */
export function runsAtOnce(entries: LogEntry[], queue: string): string[] {
  const open = new Map<string, Set<string>>();
  const problems: string[] = [];
  for (const entry of entries) {
    if (entry.k === 'killed') {
      for (const runs of open.values()) for (const run of runs) if (run.startsWith(`${entry.pid}|`)) runs.delete(run);
      continue;
    }
    if (entry.q !== queue) continue;
    const runs = open.get(keyOf(entry)) ?? new Set<string>();
    open.set(keyOf(entry), runs);
    if (entry.k === 'end') runs.delete(runOf(entry));
    else {
      if (runs.size > 0) problems.push(`${keyOf(entry)}: ${entry.v} ${entry.pid} started while ${[...runs]} ran`);
      runs.add(runOf(entry));
    }
  }
  return problems;
}

/** Per group, each message is first delivered after every message pushed before it (push order = seq). */
export function outOfOrder(entries: LogEntry[], queue: string): string[] {
  const highest = new Map<string, number>();
  const problems: string[] = [];
  for (const entry of entries) {
    if (entry.k !== 'start' || entry.q !== queue) continue;
    for (const seq of entry.seqs ?? []) {
      const top = highest.get(entry.group!) ?? -1;
      if (seq > top) {
        if (seq !== top + 1) problems.push(`${entry.group}: ${seq} delivered before ${top + 1}`);
        highest.set(entry.group!, seq);
      }
    }
  }
  return problems;
}

/** The messages of each group that a handler finished (acknowledged, partly or whole). */
export function handled(entries: LogEntry[], queue: string): Map<string, Set<number>> {
  const done = new Map<string, Set<number>>();
  for (const entry of entries) {
    if (entry.k !== 'end' || entry.q !== queue) continue;
    const seqs = entry.ok ? entry.seqs! : entry.seqs!.slice(0, entry.acked ?? 0);
    const group = done.get(entry.group!) ?? new Set<number>();
    for (const seq of seqs) group.add(seq);
    done.set(entry.group!, group);
  }
  return done;
}

/** Every message `pushed` (group → how many, seq 0..n-1) was handled. */
export function lost(entries: LogEntry[], queue: string, pushed: Map<string, number>): string[] {
  const done = handled(entries, queue);
  const problems: string[] = [];
  for (const [group, count] of pushed) {
    const missing = Array.from({ length: count }, (_, seq) => seq).filter((seq) => !done.get(group)?.has(seq));
    if (missing.length) problems.push(`${group}: ${missing.length} of ${count} never handled (first ${missing[0]})`);
  }
  return problems;
}

/** At-most-once: no message was handed to a handler twice. */
export function deliveredTwice(entries: LogEntry[], queue: string): string[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const entry of entries) {
    if (entry.k !== 'start' || entry.q !== queue) continue;
    for (const seq of entry.seqs ?? []) {
      const key = `${entry.group}|${seq}`;
      if (seen.has(key)) problems.push(`${key} delivered twice`);
      seen.add(key);
    }
  }
  return problems;
}

/** Every message of `pushed` handled, whichever process or version ran it. */
export function allHandled(entries: LogEntry[], queue: string, pushed: Map<string, number>): boolean {
  return lost(entries, queue, pushed).length === 0;
}

/** The versions whose processes ran a handler of `queue`. */
export function versionsThatRan(entries: LogEntry[], queue: string): Set<string> {
  return new Set(entries.filter((entry) => entry.k === 'start' && entry.q === queue).map((entry) => entry.v));
}
