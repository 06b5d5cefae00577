import { carrierAt, jsonFrom } from '../redis/traced-json';

/**
 * A FixedQueue list entry as fixed-push writes it: `[<13-digit server ms>,<message JSON>]`, the push
 * time first, so that a batch is one JSON array to a client. The message is what lies between the first
 * comma and the last bracket; slicing it out measured faster than one JSON.parse of the joined batch.
 * A traced queue's entries carry the push's trace context before the message (see traced-json.ts):
 * `[<ms>,0,"<carrier>",<message JSON>]`.
 */
export function entryJson(entry: string): string {
  return entry.slice(jsonFrom(entry, entry.indexOf(',') + 1), -1);
}

/** When the entry was pushed (server ms). */
export function entryTime(entry: string): number {
  return Number(entry.slice(1, entry.indexOf(',')));
}

export function entryMessage<T = unknown>(entry: string): T {
  return JSON.parse(entryJson(entry)) as T;
}

/** The messages of `entries[from, to)`, parsed, or as their JSON text (`raw`). */
export function entryMessages(entries: string[], from: number, to: number, raw: boolean): unknown[] {
  const messages = new Array<unknown>(to - from);
  for (let i = from; i < to; i++) messages[i - from] = raw ? entryJson(entries[i]) : entryMessage(entries[i]);
  return messages;
}

/**
 * The trace carriers of `entries[from, to)` that have one (each once when consecutive entries share it,
 * as a pushMany's do), or undefined when none has.
 */
export function entryCarriers(entries: string[], from: number, to: number): string[] | undefined {
  let carriers: string[] | undefined;
  for (let i = from; i < to; i++) {
    const entry = entries[i];
    const carrier = carrierAt(entry, entry.indexOf(',') + 1);
    if (carrier === undefined || carrier === carriers?.[carriers.length - 1]) continue;
    (carriers ??= []).push(carrier);
  }
  return carriers;
}
