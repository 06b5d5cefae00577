import type { NestExpressApplication } from '@nestjs/platform-express';
import { DEMO_QUEUES, startTestDemo } from '@test/support/demo';
import { pollUntil } from '@test/support/testing';

describe('demo: /metrics and /health', () => {
  let app: NestExpressApplication;
  let api: string;

  beforeAll(async () => {
    app = await startTestDemo({ eventsPerSecond: 500, games: 20 }, ['error']);
    api = await app.getUrl();
  });
  afterAll(async () => {
    await app.close();
  });

  it("serves the queues' metrics in Prometheus' text format, as the simulator pushes", async () => {
    const pushed = await pollUntil(async () => {
      const response = await fetch(`${api}/metrics`);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain;.*version=0\.0\.4/);
      const line = (await response.text())
        .split('\n')
        .find((l) => l.startsWith('nrq_messages_pushed_total{queue="game-events"}'));
      return line && Number(line.split(' ')[1]) > 0 ? line : undefined;
    }, 'pushes counted');
    expect(pushed).toMatch(/^nrq_messages_pushed_total\{queue="game-events"\} \d+$/);
    const text = await (await fetch(`${api}/metrics`)).text();
    expect(text).toContain('# TYPE nrq_task_lateness_seconds histogram');
    expect(text).toMatch(/^nrq_tasks\{queue="pet-feeding",state="scheduled"\} \d+$/m);
  });

  it('answers /health with every queue', async () => {
    const response = await fetch(`${api}/health`);
    const body = (await response.json()) as any;
    expect(response.status).toBe(200);
    expect(body.details.queues).toMatchObject({ status: 'up', redis: 'up' });
    expect(Object.keys(body.details.queues.queues).sort()).toEqual(DEMO_QUEUES);
    expect(body.details.queues.recurring).toEqual({
      'games.backlog-audit': expect.objectContaining({ handled: true }),
      'reconcile.pet-feeding': expect.objectContaining({ handled: true }),
    });
  });
});
