import type { NestExpressApplication } from '@nestjs/platform-express';
import { startRedis, type RedisServer } from '@test/support/faults';
import { pollUntil } from '@test/support/testing';
import { startTestDemo } from '@test/support/demo';

// The demo answers the queues' errors through QueueExceptionFilter, as an application would.
describe('demo app: queue errors over HTTP', () => {
  let server: RedisServer;
  let app: NestExpressApplication;

  beforeAll(async () => {
    server = await startRedis();
    app = await startTestDemo({ redisUrl: server.url, eventsPerSecond: 0 }, false);
  });

  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  const track = async () => {
    const response = await fetch(`${await app.getUrl()}/games/g1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'level_up', userId: 'u1' }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };

  it('answers 503 with the outcome while Redis is down, 202 before', async () => {
    expect(await track()).toEqual({ status: 202, body: { accepted: 1, dropped: 0 } });
    await server.kill('SIGKILL');
    // The first call may still go out on the dying connection (outcome unknown); once the client saw
    // it close, calls are not sent at all.
    const first = await track();
    expect(first.status).toBe(503);
    expect(first.body.outcome).toMatch(/^(not-sent|unknown)$/);
    const refused = await pollUntil(async () => {
      const answer = await track();
      return answer.body.outcome === 'not-sent' && answer;
    }, 'a call refused without being sent');
    expect(refused).toEqual({
      status: 503,
      body: {
        statusCode: 503,
        error: 'Service Unavailable',
        message: expect.stringMatching(/^Redis could not be reached .*the call was not sent/),
        outcome: 'not-sent',
        tries: 1,
      },
    });
  });
});
