import { describeError } from '../utils/errors';

/** The fields Node sets on a socket error. */
interface SocketError extends Error {
  code?: string;
  address?: string;
  port?: number;
  hostname?: string;
}

/**
 * ioredis' rejections of a call that had no connection to go out on. They name ioredis' options
 * (`maxRetriesPerRequest`, `enableOfflineQueue`, which the module sets for the user), not what
 * happened: that is the connection's own last error.
 */
const NOT_CONNECTED = [
  /^Reached the max retries per request limit/,
  /enableOfflineQueue options is false$/,
  /^None of startup nodes is available$/,
];

/**
 * What went wrong between this process and Redis, in the library's words (refused, timed out,
 * closed, …) rather than the client's, for log lines and error messages; the client's error stays
 * the `cause`. `connectionError` is the connection's last error, which says why a call that was
 * never sent had no connection.
 */
export function describeConnectionFailure(error: unknown, connectionError?: Error): string {
  if (!isError(error)) return describeError(error);
  const { code, address, port, hostname } = error as SocketError;
  const at = address ? ` at ${address}${port ? `:${port}` : ''}` : '';
  switch (code) {
    case 'ECONNREFUSED':
      return `connection refused${at} (no Redis listening there)`;
    case 'ETIMEDOUT':
      return `connecting timed out${at}`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `the connection was closed by the other end${at}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host ${hostname ?? 'name'} not found`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `no route to the host${at}`;
  }
  if (error.message === 'Command timed out') return 'timed out waiting for the reply';
  if (error.message === 'Connection is closed.') return 'the connection closed';
  if (NOT_CONNECTED.some((pattern) => pattern.test(error.message))) {
    const reason = (error as { lastNodeError?: Error }).lastNodeError ?? connectionError;
    return reason && reason !== error ? `not connected: ${describeConnectionFailure(reason)}` : 'not connected';
  }
  // The message alone: describeError would print a socket error of another realm whole ("Error: …").
  return describeError(error.message);
}

/** Whether a call failed for want of a reply in time (Redis may be alive but busy or frozen), not of a connection. */
export function timedOut(error: unknown): boolean {
  return isError(error) && (error.message === 'Command timed out' || error.code === 'ETIMEDOUT');
}

/** By shape, not `instanceof`: socket errors are made in Node's own realm, which a VM context (Jest) does not share. */
function isError(error: unknown): error is SocketError {
  return typeof error === 'object' && error !== null && typeof (error as Error).message === 'string';
}
