import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { QueueConfigError, QueueDashboardModule, type QueueDashboardOptions } from 'nestjs-redis-queues';
import { CapturedLogs } from './support/faults';
import { recordTasks, useQueueApps } from './support/fixtures';
import { pollUntil } from './support/testing';

const failing = recordTasks('tasks', {}, () => {
  throw new Error('the vet is <b>closed</b>');
});

@Injectable()
class HeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers['x-admin'] === 'yes';
  }
}

describe('QueueDashboardModule', () => {
  const harness = useQueueApps();

  async function serve(dashboard: QueueDashboardOptions, consumers = false) {
    const { app, fixed, delay } = await harness.start({
      root: { idlePollMs: 200 },
      fixed: [{ name: 'events', shards: 2, batchSize: 100, maxWaitMs: 60_000 }],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 1 }],
      imports: [QueueDashboardModule.register(dashboard)],
      providers: consumers ? [failing.consumer] : [],
      logger: new CapturedLogs(),
    });
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    return {
      app,
      base,
      events: fixed('events'),
      tasks: delay('tasks'),
    };
  }

  it('serves the page, and an API listing every queue with its hottest groups, upcoming tasks and dead letters', async () => {
    const { base, events, tasks } = await serve({ path: '/ops/queues/' }, true);
    await events.pushMany('<img src=x onerror=alert(1)>', [1, 2, 3]);
    await events.push('quiet', 1);
    await tasks.schedule({ secret: 'payload' }, { id: 'soon', delayMs: 0 });
    await tasks.schedule({}, { id: 'later', delayMs: 3_600_000 });
    const dead = await pollUntil(async () => (await tasks.deadLetters()).length === 1, 'the failing task to die');
    expect(dead).toBe(true);

    const page = await fetch(`${base}/ops/queues`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const policy = page.headers.get('content-security-policy');
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    const html = await page.text();
    expect(html).toContain('<title>Queues</title>');
    // No inline script: the page loads its script and styles from beside itself.
    expect(html).not.toMatch(/<script>/);
    expect(html).toContain('<script src="/ops/queues/dashboard.js"></script>');
    for (const [asset, type] of [
      ['dashboard.js', 'text/javascript'],
      ['dashboard.css', 'text/css'],
    ]) {
      const response = await fetch(`${base}/ops/queues/${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
    }
    // The path the page was reached by is written into it escaped.
    expect(await (await fetch(`${base}/ops/queues/?a="><script>`)).text()).toContain(
      '<script src="/ops/queues/dashboard.js"></script>',
    );

    const overview: any = await (await fetch(`${base}/ops/queues/api`)).json();
    expect(overview.queues.map((q: { name: string; kind: string }) => [q.name, q.kind])).toEqual([
      ['events', 'fixed'],
      ['tasks', 'delay'],
    ]);
    const [fixed, delay] = overview.queues;
    expect(fixed.stats).toMatchObject({ pending: 4, groups: 2, pushed: 4 });
    expect(fixed.hottest.map((g: { group: string; size: number }) => [g.group, g.size])).toEqual([
      ['<img src=x onerror=alert(1)>', 3],
      ['quiet', 1],
    ]);
    expect(delay.upcoming.map((t: { id: string }) => t.id)).toEqual(['later']);
    expect(delay.dead).toEqual([
      {
        id: 'soon',
        attempts: 1,
        diedAt: expect.any(Number),
        lastError: expect.stringContaining('the vet is <b>closed</b>'),
      },
    ]);
    expect(JSON.stringify(overview)).not.toContain('secret');
  });

  it('re-queues a dead task only with the header the page sends', async () => {
    const { base, tasks } = await serve({}, true);
    await tasks.schedule({}, { id: 'dies' });
    await pollUntil(async () => (await tasks.get('dies'))?.state === 'dead', 'the task to die');
    const url = `${base}/queues/api/delay/tasks/requeue/dies`;
    expect((await fetch(url, { method: 'POST' })).status).toBe(403);
    expect((await tasks.get('dies'))?.state).toBe('dead');
    const response = await fetch(url, { method: 'POST', headers: { 'x-requested-with': 'nrq-dashboard' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ requeued: true });
    expect((await tasks.get('dies'))?.attempts).toBeLessThanOrEqual(1);
    const unknown = await fetch(`${base}/queues/api/delay/nope/requeue/dies`, {
      method: 'POST',
      headers: { 'x-requested-with': 'nrq-dashboard' },
    });
    expect(unknown.status).toBe(404);
  });

  it('puts every route behind the guard the application supplies: a class, an instance or a function', async () => {
    for (const guard of [
      HeaderGuard,
      new HeaderGuard(),
      (request: { headers: Record<string, string> }) => request.headers['x-admin'] === 'yes',
    ]) {
      const { base, app } = await serve({ guard });
      for (const path of ['/queues', '/queues/api']) {
        expect((await fetch(`${base}${path}`)).status).toBe(403);
        expect((await fetch(`${base}${path}`, { headers: { 'x-admin': 'yes' } })).status).toBe(200);
      }
      expect(
        (
          await fetch(`${base}/queues/api/delay/tasks/requeue/x`, {
            method: 'POST',
            headers: { 'x-requested-with': 'nrq-dashboard' },
          })
        ).status,
      ).toBe(403);
      await harness.close(app);
    }
  });

  it('refuses bad options at registration', () => {
    expect(() => QueueDashboardModule.register({ hottestGroups: 0 })).toThrow(QueueConfigError);
    expect(() => QueueDashboardModule.register({ path: 'a b<' })).toThrow(/path must be a plain URL path/);
  });
});
