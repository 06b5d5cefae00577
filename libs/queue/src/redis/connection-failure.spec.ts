import { describeConnectionFailure, timedOut } from './connection-failure';

const socketError = (code: string, message: string, extra: object = {}) =>
  Object.assign(new Error(message), { code, ...extra });

describe('describeConnectionFailure', () => {
  it.each([
    [
      socketError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:6379', { address: '10.0.0.5', port: 6379 }),
      'connection refused at 10.0.0.5:6379 (no Redis listening there)',
    ],
    [socketError('ETIMEDOUT', 'connect ETIMEDOUT'), 'connecting timed out'],
    [socketError('ECONNRESET', 'read ECONNRESET'), 'the connection was closed by the other end'],
    [
      socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND redis.internal', { hostname: 'redis.internal' }),
      'host redis.internal not found',
    ],
    [new Error('Command timed out'), 'timed out waiting for the reply'],
    [new Error('Connection is closed.'), 'the connection closed'],
    [new Error('self-signed certificate'), 'self-signed certificate'],
  ])('says %p as %p', (error, text) => {
    expect(describeConnectionFailure(error)).toBe(text);
  });

  it("names the connection's last error, not ioredis' options, for a call that had no connection", () => {
    const flushed = new Error(
      'Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.',
    );
    const refused = socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1', { address: '127.0.0.1', port: 1 });
    expect(describeConnectionFailure(flushed, refused)).toBe(
      'not connected: connection refused at 127.0.0.1:1 (no Redis listening there)',
    );
    expect(describeConnectionFailure(flushed)).toBe('not connected');
    const cluster = Object.assign(new Error('None of startup nodes is available'), { lastNodeError: refused });
    expect(describeConnectionFailure(cluster)).toMatch(/^not connected: connection refused/);
  });

  it('tells a missing reply from a missing connection', () => {
    expect(timedOut(new Error('Command timed out'))).toBe(true);
    expect(timedOut(socketError('ETIMEDOUT', 'connect ETIMEDOUT'))).toBe(true);
    expect(timedOut(socketError('ECONNREFUSED', 'connect ECONNREFUSED'))).toBe(false);
  });
});
