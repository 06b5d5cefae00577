/**
 * A consumer's log line: `<Class.method>: <what happened> key=value ...`, with the same field names on
 * every line (group, id, attempt, size, ...) and strings quoted, so lines can be filtered and parsed.
 * The Logger's context names the queue.
 */
export function logLine(consumer: string, what: string, fields: Record<string, string | number> = {}): string {
  let line = `${consumer}: ${what}`;
  for (const [key, value] of Object.entries(fields))
    line += ` ${key}=${typeof value === 'number' ? value : JSON.stringify(value)}`;
  return line;
}

/** The Logger context of a queue's consumers, so an operator can filter one queue's lines. */
export function queueLogContext(queue: string): string {
  return `nrq:${queue}`;
}
