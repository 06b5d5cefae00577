import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { QueueConfigError, QueueDashboardModule, type QueueDashboardOptions } from 'nestjs-redis-queues';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, recordTasks, useQueueApps } from '@test/support/fixtures';
import { deferred, pollUntil } from '@test/support/testing';

const failing = recordTasks('tasks', {}, () => {
  throw new Error('the vet is <b>closed</b>');
});

const failingBatches = recordBatches('readings', {}, () => {
  throw new Error('the upstream is <i>down</i>');
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
      fixed: [
        { name: 'events', shards: 2, batchSize: 100, maxWaitMs: 60_000 },
        {
          name: 'readings',
          shards: 2,
          batchSize: 5,
          maxWaitMs: 0,
          delivery: 'at-least-once',
          maxAttempts: 2,
          backoff: { type: 'exponential', delayMs: 10 },
          groupRateLimit: { max: 100, durationMs: 60_000 },
        },
      ],
      delay: [{ name: 'tasks', shards: 2, maxAttempts: 1 }],
      imports: [QueueDashboardModule.register(dashboard)],
      providers: consumers ? [failing.consumer, failingBatches.consumer] : [],
      logger: new CapturedLogs(),
    });
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    return {
      app,
      base,
      events: fixed('events'),
      readings: fixed('readings'),
      tasks: delay('tasks'),
    };
  }

  it('serves the page, and an API listing every queue with its hottest groups, upcoming tasks and dead letters', async () => {
    const { base, events, readings, tasks } = await serve({ path: '/ops/queues/' }, true);
    const hostileGroup = '<b onclick=alert(1)>g</b>';
    await readings.pushMany(hostileGroup, [{ text: 'y'.repeat(300) }, ...[1, 2, 3, 4, 5, 6].map((seq) => ({ seq }))]);
    await pollUntil(async () => (await readings.stats()).dead === 7, 'both batches of the group to die');
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
      ['readings', 'fixed'],
      ['tasks', 'delay'],
    ]);
    const [fixed, atLeastOnce, delay] = overview.queues;
    expect(fixed).toMatchObject({ ordered: true, delivery: 'at-most-once', dead: [] });
    expect(fixed.stats).toMatchObject({ pending: 4, groups: 2, pushed: 4, active: 0, dead: 0, redelivered: 0 });
    expect(fixed.hottest.map((g: { group: string; size: number }) => [g.group, g.size])).toEqual([
      ['<img src=x onerror=alert(1)>', 3],
      ['quiet', 1],
    ]);
    expect(atLeastOnce).toMatchObject({
      ordered: true,
      delivery: 'at-least-once',
      groupRateLimit: { max: 100, durationMs: 60_000 },
    });
    expect(fixed.groupRateLimit).toBeUndefined();
    expect(atLeastOnce.stats).toMatchObject({ pushed: 7, dead: 7, redelivered: 7, pending: 0 });
    // Newest first: the second batch died after the first, which held the group until then.
    const error = 'Error: the upstream is <i>down</i>';
    expect(atLeastOnce.dead).toEqual([
      {
        id: expect.any(String),
        group: hostileGroup,
        size: 2,
        attempts: 2,
        lastError: error,
        diedAt: expect.any(Number),
        preview: ['{"seq":5}', '{"seq":6}'],
      },
      {
        id: expect.any(String),
        group: hostileGroup,
        size: 5,
        attempts: 2,
        lastError: error,
        diedAt: expect.any(Number),
        // A few messages, each cut short: enough to recognise the batch.
        preview: [`{"text":"${'y'.repeat(110)}…`, '{"seq":1}', '{"seq":2}'],
      },
    ]);
    expect(atLeastOnce.dead[0].diedAt).toBeGreaterThanOrEqual(atLeastOnce.dead[1].diedAt);
    expect(atLeastOnce.dead[1].preview[0]).toHaveLength(120);
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

  it('serves the page with the queues and their figures already in it, before any poll', async () => {
    const { base, events, tasks } = await serve({ path: 'queues' });
    await events.pushMany('<img src=x onerror=alert(1)>', [1, 2, 3]);
    await events.pushMany('quiet', [1, 2]);
    await tasks.schedule({}, { id: 'later', delayMs: 3_600_000 });
    await tasks.pause();

    const html = await (await fetch(`${base}/queues`)).text();
    expect(html).not.toContain('connecting…');
    expect(html).toMatch(/<span id="status">as of \d{4}-\d\d-\d\dT/);
    const card = (name: string) => html.match(new RegExp(`<section data-queue="${name}">.*?</section>`))?.[0] ?? '';
    expect(card('events')).toContain('<b data-figure="pending">5</b><span>pending messages</span>');
    expect(card('events')).toContain('<b data-figure="groups">2</b>');
    expect(card('events')).toContain('<b data-figure="pushed">5</b>');
    expect(card('events')).toContain('<small class="mode">ordered · at-most-once</small>');
    expect(card('events')).toContain('<td>&lt;img src=x onerror=alert(1)&gt;</td>');
    expect(card('readings')).toContain('no dead batch');
    expect(card('readings')).toContain(
      '<small class="mode">ordered · at-least-once · 100 batches / 1 min per group</small>',
    );
    expect(card('tasks')).toContain('<b data-figure="scheduled">1</b><span>tasks scheduled</span>');
    expect(card('tasks')).toContain('<small class="paused">paused</small>');
    expect(card('tasks')).toMatch(/<td>later<\/td><td>in (59\.\d min|60 min|1 h)<\/td>/);
    expect(html).not.toContain('<img');
  });

  it('re-queues a dead task only with the header the page sends, and answers 404 for what it does not know', async () => {
    const { base, tasks } = await serve({}, true);
    await tasks.schedule({}, { id: 'dies' });
    await pollUntil(async () => (await tasks.get('dies'))?.state === 'dead', 'the task to die');
    const url = `${base}/queues/api/delay/tasks/requeue/dies`;
    expect((await fetch(url, { method: 'POST' })).status).toBe(403);
    expect((await tasks.get('dies'))?.state).toBe('dead');
    // The re-queued task runs until the checks below are done, rather than dying anew meanwhile.
    const vet = deferred();
    failing.behaviour = () => vet.promise;
    const response = await fetch(url, { method: 'POST', headers: { 'x-requested-with': 'nrq-dashboard' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ requeued: true });
    expect((await tasks.get('dies'))?.attempts).toBeLessThanOrEqual(1);
    // No longer dead, never existed, too long to be an id, a queue unknown or of the other kind.
    for (const path of [
      'tasks/requeue/dies',
      'tasks/requeue/nope',
      `tasks/requeue/${'x'.repeat(2000)}`,
      'nope/requeue/dies',
      'events/requeue/dies',
    ]) {
      const refused = await fetch(`${base}/queues/api/delay/${path}`, {
        method: 'POST',
        headers: { 'x-requested-with': 'nrq-dashboard' },
      });
      expect([path.slice(0, 40), refused.status]).toEqual([path.slice(0, 40), 404]);
    }
    vet.resolve();
  });

  it('re-queues a dead batch of a FixedQueue only with that header, and answers 404 for what it does not know', async () => {
    const { base, readings } = await serve({}, true);
    await readings.pushMany('sensor-7', [1, 2, 3]);
    const [dead] = await pollUntil(async () => {
      const batches = await readings.deadLetters();
      return batches.length === 1 ? batches : undefined;
    }, 'the batch to die');
    expect(dead).toMatchObject({ group: 'sensor-7', messages: [1, 2, 3], attempts: 2 });
    const post = (path: string, headers: Record<string, string> = { 'x-requested-with': 'nrq-dashboard' }) =>
      fetch(`${base}/queues/api/fixed/${path}`, { method: 'POST', headers });
    const url = `readings/requeue/${encodeURIComponent(dead.id)}`;

    expect((await post(url, {})).status).toBe(403);
    expect((await post(url, { 'x-requested-with': 'someone-else' })).status).toBe(403);
    expect((await readings.deadLetters()).map((batch) => batch.id)).toEqual([dead.id]);

    failingBatches.behaviour = () => undefined;
    const before = failingBatches.messages().length;
    const response = await post(url);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ requeued: true, dropped: 0 });
    await failingBatches.untilMessages(before + 3);
    expect(failingBatches.batches.at(-1)).toMatchObject({ group: 'sensor-7', messages: [1, 2, 3] });
    expect(failingBatches.batches.at(-1)?.ctx.attempt).toBe(1);
    await pollUntil(async () => (await readings.stats()).delivered === 3, 'the re-queued batch acknowledged');
    expect(await readings.deadLetters()).toEqual([]);

    // Already re-queued, never existed, too long to be an id, a queue unknown or of the other kind.
    for (const path of [
      url,
      'readings/requeue/0.nope',
      `readings/requeue/${'x'.repeat(2000)}`,
      `nope/requeue/${encodeURIComponent(dead.id)}`,
      `tasks/requeue/${encodeURIComponent(dead.id)}`,
    ]) {
      const refused = await post(path);
      expect([path.slice(0, 40), refused.status]).toEqual([path.slice(0, 40), 404]);
    }
    expect((await readings.stats()).requeued).toBe(3);
  });

  it('pauses and resumes a queue only with the header the page sends, and says so in the overview', async () => {
    const { base, events, tasks } = await serve({});
    const post = (path: string, headers: Record<string, string> = { 'x-requested-with': 'nrq-dashboard' }) =>
      fetch(`${base}/queues/api/${path}`, { method: 'POST', headers });
    expect((await post('fixed/events/pause', {})).status).toBe(403);
    expect(await events.isPaused()).toBe(false);
    const paused = await post('fixed/events/pause');
    expect([paused.status, await paused.json()]).toEqual([200, { paused: true }]);
    expect((await post('delay/tasks/pause')).status).toBe(200);
    expect([await events.isPaused(), await tasks.isPaused()]).toEqual([true, true]);
    const overview: any = await (await fetch(`${base}/queues/api`)).json();
    expect(overview.queues.map((q: { name: string; paused: boolean }) => [q.name, q.paused])).toEqual([
      ['events', true],
      ['readings', false],
      ['tasks', true],
    ]);
    expect((await post('fixed/events/resume')).status).toBe(200);
    expect(await events.isPaused()).toBe(false);
    for (const path of ['fixed/nope/pause', 'delay/events/pause', 'other/events/pause'])
      expect([path, (await post(path)).status]).toEqual([path, 404]);
  });

  it('shows a data loss until it is acknowledged, through a call that needs the header the page sends', async () => {
    const { base, events } = await serve({});
    const { record } = events;
    // The record gone, then found so by this process' check: the loss is recorded with it.
    await harness.redis.del(record.keys.meta);
    expect(await record.restore()).toBe('lost');
    const lostAt = async () => {
      const overview: any = await (await fetch(`${base}/queues/api`)).json();
      return overview.queues.map((q: { name: string; dataLostAt?: number }) => [q.name, q.dataLostAt]);
    };
    expect(await lostAt()).toEqual([
      ['events', expect.any(Number)],
      ['readings', undefined],
      ['tasks', undefined],
    ]);
    const html = await (await fetch(`${base}/queues`)).text();
    expect(html).toMatch(
      /<p class="warning" data-data-lost>data lost [^<]+: its messages are gone; shown until acknowledged<\/p>/,
    );

    const post = (path: string, headers: Record<string, string> = { 'x-requested-with': 'nrq-dashboard' }) =>
      fetch(`${base}/queues/api/${path}`, { method: 'POST', headers });
    expect((await post('fixed/events/acknowledge-data-loss', {})).status).toBe(403);
    expect((await record.state()).lostAt).toEqual(expect.any(Number));
    const acknowledged = await post('fixed/events/acknowledge-data-loss');
    expect([acknowledged.status, await acknowledged.json()]).toEqual([200, { acknowledged: true }]);
    expect(await (await post('fixed/events/acknowledge-data-loss')).json()).toEqual({ acknowledged: false });
    expect(await lostAt()).toEqual([
      ['events', undefined],
      ['readings', undefined],
      ['tasks', undefined],
    ]);
    for (const path of ['fixed/nope/acknowledge-data-loss', 'delay/events/acknowledge-data-loss'])
      expect([path, (await post(path)).status]).toEqual([path, 404]);
  });

  it('lists paused groups, and resumes one only with the header the page sends', async () => {
    const { base, events } = await serve({});
    await events.pushMany('<b>tenant</b>', [1, 2]);
    await events.pauseGroup('<b>tenant</b>');
    const overview: any = await (await fetch(`${base}/queues/api`)).json();
    const fixed = overview.queues.find((q: { name: string }) => q.name === 'events');
    expect(fixed.stats.pausedGroups).toBe(1);
    expect(fixed.pausedGroups).toEqual([{ group: '<b>tenant</b>', reason: 'manual', pausedAt: expect.any(Number) }]);
    const html = await (await fetch(`${base}/queues`)).text();
    expect(html).toContain('<b data-figure="paused-groups">1</b><span>groups paused</span>');
    expect(html).toContain('<tr data-paused-group="&lt;b&gt;tenant&lt;/b&gt;"><td>&lt;b&gt;tenant&lt;/b&gt;</td>');

    const post = (path: string, headers: Record<string, string> = { 'x-requested-with': 'nrq-dashboard' }) =>
      fetch(`${base}/queues/api/fixed/${path}`, { method: 'POST', headers });
    const url = `events/groups/${encodeURIComponent('<b>tenant</b>')}/resume`;
    expect((await post(url, {})).status).toBe(403);
    expect((await events.pausedGroups()).items).toHaveLength(1);
    const resumed = await post(url);
    expect([resumed.status, await resumed.json()]).toEqual([200, { resumed: true }]);
    expect(await (await post(url)).json()).toEqual({ resumed: false });
    expect((await events.pausedGroups()).items).toEqual([]);
    for (const path of ['nope/groups/g/resume', `events/groups/${'x'.repeat(600)}/resume`])
      expect([path.slice(0, 40), (await post(path)).status]).toEqual([path.slice(0, 40), 404]);
    expect((await fetch(`${base}/queues/api/delay/tasks/groups/g/resume`, { method: 'POST' })).status).toBe(404);
  });

  it("pages through dead letters after the overview's newest, and shows a group's oldest messages", async () => {
    const { base, events, tasks } = await serve({ deadLetters: 2 }, true);
    for (const id of ['a', 'b', 'c', 'd', 'e']) await tasks.schedule({}, { id });
    await pollUntil(async () => (await tasks.stats()).dead === 5, 'five dead tasks');
    const overview: any = await (await fetch(`${base}/queues/api`)).json();
    const delay = overview.queues.find((q: { name: string }) => q.name === 'tasks');
    const seen: string[] = delay.dead.map((t: { id: string }) => t.id);
    let cursor: string | null = delay.deadCursor;
    while (cursor) {
      const page: any = await (
        await fetch(`${base}/queues/api/delay/tasks/dead?cursor=${encodeURIComponent(cursor)}`)
      ).json();
      seen.push(...page.dead.map((t: { id: string }) => t.id));
      cursor = page.deadCursor;
    }
    expect(seen.sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect((await fetch(`${base}/queues/api/delay/tasks/dead?cursor=junk`)).status).toBe(404);

    await events.pushMany('<b>device</b>', [{ n: 1 }, { n: 2 }]);
    const head: any = await (
      await fetch(`${base}/queues/api/fixed/events/groups/${encodeURIComponent('<b>device</b>')}/head`)
    ).json();
    expect(head.messages.map((m: { preview: string }) => m.preview)).toEqual(['{"n":1}', '{"n":2}']);
    expect(head.messages[0].pushedAt).toBeLessThanOrEqual(head.time);
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
      for (const kind of ['delay/tasks', 'fixed/readings']) {
        const requeue = await fetch(`${base}/queues/api/${kind}/requeue/x`, {
          method: 'POST',
          headers: { 'x-requested-with': 'nrq-dashboard' },
        });
        expect(requeue.status).toBe(403);
      }
      await harness.close(app);
    }
  });

  it('refuses bad options at registration', () => {
    expect(() => QueueDashboardModule.register({ hottestGroups: 0 })).toThrow(QueueConfigError);
    expect(() => QueueDashboardModule.register({ path: 'a b<' })).toThrow(/path must be a plain URL path/);
  });
});
