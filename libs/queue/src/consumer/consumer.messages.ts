import { HandlerTimeoutError, QueueError } from '../errors';

/** The errors of the consumer runtime, their texts in one place. */

/** What aborts the signals of handlers still running when shutdown gives their work back. */
export const shutdownRanOut = () => new QueueError('shutdown timeout ran out');

/** What aborts the signal of a delivery whose lease the heartbeat found lost. */
export const leaseLostError = () => new QueueError('lease lost');

export const handlerTimedOut = (timeoutMs: number, what: string) => new HandlerTimeoutError(timeoutMs, what);

/** The last error recorded for a delivery given back at shutdown while its handler ran past its deadline. */
export const givenBackOverdue = (label: string) =>
  `handler past handlerTimeoutMs had not settled when its process shut down (${label}); the attempt counts`;
