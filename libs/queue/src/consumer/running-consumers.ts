import { QueueInputError, QueueInUseError } from '../errors';
import type { ObliterateOptions, QueueKind } from '../interfaces';
import { queueInUse } from '../queue.messages';

interface Consumer {
  /** `Class.method` */
  readonly label: string;
}

/**
 * The consumers of one queue that run in this process: QueueOrchestrator adds each when it starts and
 * removes it once stopped; `obliterate` refuses while any runs.
 */
export class RunningConsumers {
  private readonly running = new Set<Consumer>();

  add(consumer: Consumer): void {
    this.running.add(consumer);
  }

  delete(consumer: Consumer): void {
    this.running.delete(consumer);
  }

  labels(): string[] {
    return [...this.running].map((consumer) => consumer.label);
  }

  /** Checks `obliterate`'s options, and refuses while consumers of the queue run here unless forced. */
  assertObliterable(kind: QueueKind, name: string, options: unknown): void {
    const { force } = obliterateOptions(options);
    const running = this.labels();
    if (running.length > 0 && !force) throw new QueueInUseError(queueInUse(kind, name, running), running);
  }
}

function obliterateOptions(options: unknown): ObliterateOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new QueueInputError(`obliterate takes an options object ({ force?: boolean }), got ${describe(options)}`);
  const unknown = Object.keys(options).filter((key) => key !== 'force');
  if (unknown.length > 0)
    throw new QueueInputError(`obliterate takes only { force?: boolean }; unknown option(s): ${unknown.join(', ')}`);
  const { force } = options as { force?: unknown };
  if (force !== undefined && typeof force !== 'boolean')
    throw new QueueInputError(`obliterate's force must be a boolean, got ${describe(force)}`);
  return { force };
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `${JSON.stringify(value)} (${typeof value})`;
}
