import type { INestApplication } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type DelayQueue, type FixedQueue, getDelayQueueToken, QueueDashboardModule } from 'nestjs-redis-queues';
import { type Browser, chromium, type Page } from 'playwright-core';
import { startDemo } from '../../apps/demo/src/demo.app';
import { VET_CHECKS } from '../../apps/demo/src/pets/pets.constants';
import { VetConsumer } from '../../apps/demo/src/pets/vet.consumer';
import { DEMO_QUEUES, DEMO_DATABASE } from '@test/support/demo';
import { CapturedLogs } from '@test/support/faults';
import { recordBatches, useQueueApps } from '@test/support/fixtures';
import { pollUntil, redisUrl, uniquePrefix } from '@test/support/testing';

const ARTIFACTS = join(__dirname, '../../test-artifacts');
/** A pet hour lasts 200 ms: the story's vet check-ups come 200 ms in. */
const TIME_SCALE = 18_000;
/**
 * Long enough for two failed attempts of the story's check-ups: the pets' PGlite shares the demo's process,
 * and on a loaded machine its first queries hold the story's check-ups back for seconds.
 */
const VET_CLOSED_MS = 5_000;
const HOSTILE_ID = '<img src=x onerror="window.__xss = 1">';

/**
 * A headless chromium on the dashboard at `url`. Script errors and Content-Security-Policy refusals
 * both end up in `problems` (the favicon's 404 aside).
 */
async function openDashboard(url: string, problems: string[]): Promise<{ browser: Browser; page: Page }> {
  // On a closed network, in a fresh profile of Playwright's: no sandbox (root in CI), nothing that phones home.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1500 } });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) problems.push(message.text());
  });
  await page.goto(url);
  return { browser, page };
}

const localUrl = async (app: INestApplication) => (await app.getUrl()).replace('[::1]', '127.0.0.1');

const figureOf = (page: Page, queue: string, name: string) =>
  page.locator(`section[data-queue="${queue}"] [data-figure="${name}"]`);
const numberOf = async (page: Page, queue: string, name: string) =>
  Number((await figureOf(page, queue, name).textContent())?.replace(/,/g, ''));

describe('the dashboard in a real browser, while the demo runs', () => {
  let app: INestApplication | undefined;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    app = await startDemo(
      {
        ...DEMO_DATABASE,
        redisUrl: redisUrl(),
        prefix: uniquePrefix('dash'),
        port: 0,
        timeScale: TIME_SCALE,
        summaryIntervalMs: 0,
        vetClosedMs: VET_CLOSED_MS,
        eventsPerSecond: 2000,
      },
      false,
    );
    // While the vet is still closed: a check-up under a hostile id, to die beside the story's.
    await app.get<DelayQueue>(getDelayQueueToken(VET_CHECKS)).schedule({ petId: 'mallory' }, { id: HOSTILE_ID });
    ({ browser, page } = await openDashboard(`${await localUrl(app)}/queues`, problems));
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const number = (queue: string, name: string) => numberOf(page, queue, name);

  it('shows every queue, with counters that move as the demo runs', async () => {
    await page.locator('section[data-queue="game-events"]').waitFor();
    const cards = page.locator('section[data-queue]');
    // The schedules' own queues (recurring.<schedule>) are folded into their rows on the Recurring card.
    expect(
      await cards.evaluateAll((sections) => sections.map((section) => section.getAttribute('data-queue'))),
    ).toEqual(DEMO_QUEUES.filter((name) => !name.startsWith('recurring.')));
    expect(await page.locator('section[data-queue] h2 small:first-of-type').allTextContents()).toEqual([
      'FixedQueue',
      'FixedQueue',
      'DelayQueue',
      'DelayQueue',
      'DelayQueue',
    ]);
    // The demo's @Recurring job, with its schedule, next run and handler, on the Recurring card first.
    const schedule = page.locator('section[data-schedules] tr[data-schedule="games.backlog-audit"] td');
    expect(await schedule.allTextContents()).toEqual([
      'games.backlog-audit',
      'every 10000 ms',
      // Ahead, or just passed while the tick runs.
      expect.stringMatching(/^(in \d|\d.* ago$)/),
      expect.stringMatching(/^(never|completed .* ago)$/),
      'here',
      expect.stringMatching(/^\d+ running · lag .+ pause$/),
    ]);
    // How a FixedQueue delivers is on its card, beside its counters of redeliveries and dead messages.
    expect(await page.locator('section[data-queue="game-events"] h2 small.mode').textContent()).toMatch(
      /^(un)?ordered · at-(most|least)-once$/,
    );
    for (const counter of ['active', 'redelivered', 'dead', 'lag'])
      await figureOf(page, 'game-events', counter).waitFor();
    const before = await number('game-events', 'pushed');
    await pollUntil(
      async () => (await number('game-events', 'pushed')) > before,
      'the pushed counter to move on the page',
    );
    await pollUntil(async () => (await number('game-events', 'delivered-rate')) > 0, 'a delivery rate on the page');
    expect(await page.locator('section[data-queue="game-events"] tr[data-group]').count()).toBeGreaterThan(0);
    // A chart draws a line once two refreshes have given it a rate.
    await page.locator('section[data-queue="game-events"] polyline').first().waitFor({ state: 'attached' });
  });

  it('re-queues a dead task with its button, and renders hostile ids as text', async () => {
    const vet = app!.get<DelayQueue>(getDelayQueueToken(VET_CHECKS));
    const rex = page.locator('section[data-queue="vet-checks"] tr[data-dead-id="vet:rex"]');
    await rex.waitFor({ timeout: 20_000 });
    const hostile = page.locator('section[data-queue="vet-checks"] tr[data-dead-id]', { hasText: 'onerror' });
    await hostile.waitFor({ timeout: 20_000 });
    expect(await hostile.locator('td').first().textContent()).toBe(HOSTILE_ID);
    // Evaluated in the page (a string: this file is compiled without the DOM's types).
    expect(await page.evaluate('({ xss: window.__xss, images: document.images.length })')).toEqual({
      xss: undefined,
      images: 0,
    });

    // The vet opens VET_CLOSED_MS after the demo's start-up ended, however long that took: a check-up
    // re-queued from then on succeeds.
    const opensAt = app!.get(VetConsumer).opensAt;
    await pollUntil(() => Date.now() >= opensAt, 'the vet to open', 30_000, 100);
    expect((await vet.get('vet:rex'))?.state).toBe('dead');
    const completedBefore = (await vet.stats()).completed;
    await rex.getByRole('button', { name: 're-queue' }).click();
    await page.locator('#status', { hasText: 're-queued vet:rex' }).waitFor();
    await rex.waitFor({ state: 'detached' });
    await pollUntil(
      async () => (await vet.get('vet:rex')) === null && (await vet.stats()).completed > completedBefore,
      'the re-queued check-up to succeed',
    );

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('closes within the shutdown budget while the page is still open and polling', async () => {
    const polled = await number('game-events', 'pushed');
    await pollUntil(async () => (await number('game-events', 'pushed')) > polled, 'the page to poll again');
    const closing = Date.now();
    await app!.close();
    app = undefined;
    // Within the queues' shutdown budget (shutdownTimeoutMs + commandTimeoutMs): the page polling meanwhile adds nothing.
    expect(Date.now() - closing).toBeLessThan(15_000);
  });
});

describe('the dashboard in a real browser, on dead batches of an at-least-once FixedQueue', () => {
  let browser: Browser | undefined;
  // Declared before the harness, so that it runs first (Jest runs afterAll hooks in declaration order) and
  // the page is gone before the app closes, as in the suite above: one CI run hung in that close (90 s)
  // with the page still open.
  afterAll(async () => {
    await browser?.close();
  });
  const harness = useQueueApps({ scope: 'suite' });
  const HOSTILE_GROUP = '<img src=x onerror="window.__xss = 2">';
  // Long, too: the page gets it cut short, and the card must not grow to fit it.
  const HOSTILE_MESSAGE = { reading: '</code><script>window.__xss = 3</script>', raw: 'f'.repeat(300) };
  let upstreamDown = true;
  const reporter = recordBatches<unknown>('readings', {}, () => {
    if (upstreamDown) throw new Error('upstream refused the batch: 503 Service Unavailable');
  });
  let app: INestApplication;
  let page: Page;
  let readings: FixedQueue;
  const problems: string[] = [];

  beforeAll(async () => {
    const started = await harness.start({
      root: { idlePollMs: 200 },
      fixed: [
        {
          name: 'readings',
          shards: 2,
          batchSize: 4,
          maxWaitMs: 0,
          delivery: 'at-least-once',
          maxAttempts: 2,
          backoff: { type: 'exponential', delayMs: 10 },
          // Never reached here: the card says it, as the script renders it.
          groupRateLimit: { max: 100, durationMs: 60_000 },
        },
      ],
      imports: [QueueDashboardModule.register()],
      providers: [reporter.consumer],
      // The dead-lettering the test causes on purpose is logged as an error: kept out of the test's output.
      logger: new CapturedLogs(),
    });
    app = started.app;
    await app.listen(0, '127.0.0.1');
    readings = started.fixed('readings');
    await readings.pushMany(HOSTILE_GROUP, [HOSTILE_MESSAGE, ...[1, 2, 3, 4, 5].map((seq) => ({ seq }))]);
    await readings.pushMany('sensor-7', [{ celsius: 21.5 }, { celsius: 21.7 }, { celsius: 22.1 }]);
    await pollUntil(async () => (await readings.stats()).dead === 9, 'every batch to die');
    ({ browser, page } = await openDashboard(`${await localUrl(app)}/queues`, problems));
  });

  it('lists each dead batch with its group, size, attempts, error and first messages, all as text', async () => {
    const dead = page.locator('section[data-queue="readings"] tbody[data-dead-id]');
    await pollUntil(async () => (await dead.count()) === 3, 'three dead batches on the page');
    expect(await page.locator('section[data-queue="readings"] h2 small.mode').textContent()).toBe(
      'ordered · at-least-once · 100 batches / 1 min per group',
    );
    expect(await numberOf(page, 'readings', 'dead')).toBe(9);
    expect(await numberOf(page, 'readings', 'redelivered')).toBe(9);

    const hostile = dead.filter({ hasText: 'onerror' });
    expect(await hostile.count()).toBe(2);
    const first = hostile.last();
    expect(await first.locator('tr').first().locator('td').allTextContents()).toEqual([
      HOSTILE_GROUP,
      '4',
      '2',
      'Error: upstream refused the batch: 503 Service Unavailable',
      expect.stringMatching(/ago$/),
      're-queue',
    ]);
    expect(await first.locator('td.preview code').allTextContents()).toEqual([
      `${JSON.stringify(HOSTILE_MESSAGE).slice(0, 119)}…`,
      '{"seq":1}',
      '{"seq":2}',
      '… 1 more',
    ]);
    expect(
      await page.evaluate('({ xss: window.__xss, images: document.images.length, scripts: document.scripts.length })'),
    ).toEqual({ xss: undefined, images: 0, scripts: 1 });
    const card = page.locator('section[data-queue="readings"]');
    expect(await card.evaluate((section) => section.scrollWidth - section.clientWidth)).toBe(0);
  });

  it('re-queues a dead batch with its button, and the batch is then delivered', async () => {
    upstreamDown = false;
    const sensor = page.locator('section[data-queue="readings"] tbody[data-dead-id]', { hasText: 'sensor-7' });
    const id = await sensor.getAttribute('data-dead-id');
    const before = reporter.messages().length;
    await sensor.getByRole('button', { name: 're-queue' }).click();
    await page.locator('#status', { hasText: `re-queued ${id}` }).waitFor();
    await sensor.waitFor({ state: 'detached' });
    await reporter.untilMessages(before + 3);
    expect(reporter.batches.at(-1)).toMatchObject({
      group: 'sensor-7',
      messages: [{ celsius: 21.5 }, { celsius: 21.7 }, { celsius: 22.1 }],
    });
    expect(reporter.batches.at(-1)?.ctx.attempt).toBe(1);
    await pollUntil(async () => (await numberOf(page, 'readings', 'delivered')) === 3, 'the delivery on the page');
    expect(await page.locator('section[data-queue="readings"] tbody[data-dead-id]').count()).toBe(2);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-dead-batches.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('pauses the queue with its button (a paused badge, nothing delivered), opens a group on click, and resumes', async () => {
    const card = page.locator('section[data-queue="readings"]');
    await card.getByRole('button', { name: 'pause' }).click();
    await card.locator('h2 small.paused', { hasText: 'paused' }).waitFor();
    expect(await readings.isPaused()).toBe(true);
    const before = reporter.messages().length;
    await readings.pushMany('sensor-9', [{ celsius: 30 }, { celsius: 31 }]);
    // Due at once (maxWaitMs 0) yet held back: it waits among the hottest groups, its head a click away.
    await card.locator('tr[data-group="sensor-9"]').click();
    await card.locator('[data-head="sensor-9"] code', { hasText: '{"celsius":31}' }).waitFor();
    expect(await card.locator('[data-head="sensor-9"] code').allTextContents()).toEqual([
      '{"celsius":30}',
      '{"celsius":31}',
    ]);
    expect(reporter.messages()).toHaveLength(before);
    expect((await readings.stats()).pending).toBe(2);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-paused.png'), fullPage: true });

    await card.getByRole('button', { name: 'resume' }).click();
    await card.locator('h2 small.paused').waitFor({ state: 'detached' });
    expect(await readings.isPaused()).toBe(false);
    await reporter.untilMessages(before + 2);
    expect(reporter.batches.at(-1)).toMatchObject({ group: 'sensor-9', messages: [{ celsius: 30 }, { celsius: 31 }] });
    expect(problems).toEqual([]);
  });

  it('lists a paused group with its resume button, which delivers what it held', async () => {
    const card = page.locator('section[data-queue="readings"]');
    const before = reporter.messages().length;
    await readings.pauseGroup('sensor-11');
    await readings.pushMany('sensor-11', [{ celsius: 18 }, { celsius: 19 }]);
    const row = card.locator('tr[data-paused-group="sensor-11"]');
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual([
      'sensor-11',
      'manual',
      expect.stringMatching(/ago$/),
      'resume',
    ]);
    expect(await numberOf(page, 'readings', 'paused-groups')).toBe(1);

    await row.getByRole('button', { name: 'resume' }).click();
    await page.locator('#status', { hasText: 'resumed group sensor-11' }).waitFor();
    await row.waitFor({ state: 'detached' });
    expect((await readings.pausedGroups()).items).toEqual([]);
    await reporter.untilMessages(before + 2);
    expect(reporter.batches.at(-1)).toMatchObject({ group: 'sensor-11', messages: [{ celsius: 18 }, { celsius: 19 }] });
    expect(problems).toEqual([]);
  });

  it('shows a data loss with its acknowledge button, which clears it for every process', async () => {
    const card = page.locator('section[data-queue="readings"]');
    const { record } = readings;
    // The record gone, then found so by this process' check: the loss is recorded with it.
    await harness.redis.del(record.keys.meta);
    expect(await record.restore()).toBe('lost');
    const lost = card.locator('p[data-data-lost]');
    await lost.waitFor();
    expect(await lost.textContent()).toMatch(
      /^data lost .+ ago: its messages are gone; shown until acknowledged acknowledge$/,
    );

    await lost.getByRole('button', { name: 'acknowledge' }).click();
    await page.locator('#status', { hasText: 'acknowledged the data loss of readings' }).waitFor();
    await lost.waitFor({ state: 'detached' });
    expect((await record.state()).lostAt).toBeUndefined();
    expect(problems).toEqual([]);
  });
});
