import type { QueueCallOutcome } from '../errors';
import type { RedisClient } from './redis-client';

/** The state of a client when a call was issued, to judge its failure by (`CallOutcomes.of`). */
export interface Issued {
  ready: boolean;
  readies: number;
}

/** Refusals to queue a call while disconnected (`enableOfflineQueue: false`): it was never written. */
const NEVER_SENT = /isn't (writeable|ready) and enableOfflineQueue options is false$/;

/**
 * Errors ioredis rejects a call with that do not say by themselves whether it was written: a command
 * waiting in the offline queue gets them, and so does one already sent when the connection drops.
 * Timeouts are not among them: a timed-out call stays queued in ioredis and may still be sent.
 */
const UNSENT_WHEN_OFFLINE = [
  /^Reached the max retries per request limit/,
  /^Connection is closed\.$/,
  /^None of startup nodes is available$/,
];

/**
 * Tells whether a failed call can have reached Redis. A call issued while the client was not ready
 * waits in its offline queue, which is written only once the client becomes ready; if it failed with
 * one of the errors above and the client has not become ready since, it was never sent. Anything else
 * is unknown. Counting 'ready' events (not reading the status at failure) also covers a client that
 * became ready, sent the call and lost the connection again before the call failed.
 */
export class CallOutcomes {
  private static readonly byClient = new WeakMap<RedisClient, CallOutcomes>();
  private readies = 0;

  private constructor(private readonly client: RedisClient) {
    client.on('ready', () => this.readies++);
  }

  /** One per client, so many users of one client add one listener. */
  static of(client: RedisClient): CallOutcomes {
    let outcomes = CallOutcomes.byClient.get(client);
    if (!outcomes) {
      outcomes = new CallOutcomes(client);
      CallOutcomes.byClient.set(client, outcomes);
    }
    return outcomes;
  }

  issue(): Issued {
    return { ready: this.client.status === 'ready', readies: this.readies };
  }

  outcome(error: Error, issued: Issued): QueueCallOutcome {
    if (NEVER_SENT.test(error.message)) return 'not-sent';
    const offlineAllAlong = !issued.ready && issued.readies === this.readies;
    return offlineAllAlong && UNSENT_WHEN_OFFLINE.some((pattern) => pattern.test(error.message))
      ? 'not-sent'
      : 'unknown';
  }
}
