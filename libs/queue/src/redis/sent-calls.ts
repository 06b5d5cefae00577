import { ReplyError } from 'ioredis';

/** A call as ioredis sends it: its promise, and how to fail it (ioredis' `Command`). */
export interface SentCommand {
  readonly promise: Promise<unknown>;
  reject(error: Error): void;
}

/** The parts of a client (a `Redis`, a `Cluster`, or one node of it) the count needs. */
export interface CallingClient {
  readonly status: string;
  sendCommand(command: SentCommand, ...rest: unknown[]): unknown;
  on(event: 'close', listener: () => void): unknown;
}

const counts = new WeakMap<object, SentCalls>();

/**
 * The calls a client sent and has not had answered, kept here since ioredis keeps its own queue
 * private. Every call passes through the client's `sendCommand` (auto-pipelined ones, the handshake's,
 * those flushed from the offline queue), which is wrapped once per client. Redis answers a connection's
 * calls in order, so a reply to one means every call sent before it was answered too; a call whose wait
 * timed out stays counted until then, since its reply may still come. A connection that closes answers
 * nothing more: ioredis fails, or sends again through `sendCommand`, what it had.
 */
export class SentCalls {
  /** In the order sent. */
  private readonly waiting = new Set<SentCommand>();

  static of(client: CallingClient): SentCalls {
    let calls = counts.get(client);
    if (!calls) {
      calls = new SentCalls(client);
      counts.set(client, calls);
    }
    return calls;
  }

  private constructor(client: CallingClient) {
    const send = client.sendCommand.bind(client);
    // Every argument passed on: a Cluster's takes the node a call was routed to, a node's the pipeline's stream.
    client.sendCommand = (command, ...rest) => {
      // A closed client fails the call at once, and no reply or close follows to uncount it.
      if (client.status !== 'end') this.sent(command);
      return send(command, ...rest);
    };
    client.on('close', () => this.waiting.clear());
  }

  /** Calls sent and not answered yet. */
  get count(): number {
    return this.waiting.size;
  }

  /** Fails every call awaiting its reply with `error` (they may or may not have run); how many there were. */
  failAll(error: Error): number {
    const calls = [...this.waiting];
    this.waiting.clear();
    for (const call of calls) call.reject(error);
    return calls.length;
  }

  private sent(command: SentCommand): void {
    if (this.waiting.has(command)) return;
    this.waiting.add(command);
    command.promise.then(
      () => this.answered(command),
      (error: unknown) => {
        if (error instanceof ReplyError) this.answered(command);
      },
    );
  }

  private answered(command: SentCommand): void {
    if (!this.waiting.has(command)) return;
    for (const earlier of this.waiting) {
      this.waiting.delete(earlier);
      if (earlier === command) return;
    }
  }
}
