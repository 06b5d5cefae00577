import type { NestExpressApplication } from '@nestjs/platform-express';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type DelayQueue, getDelayQueueToken } from 'nestjs-redis-queues';
import { type Browser, chromium, type Page } from 'playwright-core';
import { startDemo } from '../../apps/demo/src/demo.app';
import { VET_CHECKS } from '../../apps/demo/src/pets/pets.constants';
import { pollUntil, redisUrl, uniquePrefix } from '../support/testing';

const ARTIFACTS = join(__dirname, '../../test-artifacts');
/** A pet hour lasts 200 ms: the story's vet check-ups come 200 ms in. */
const TIME_SCALE = 18_000;
const VET_CLOSED_MS = 2_000;
const HOSTILE_ID = '<img src=x onerror="window.__xss = 1">';

describe('the dashboard in a real browser, while the demo runs', () => {
  let app: NestExpressApplication;
  let browser: Browser;
  let page: Page;
  let startedAt: number;
  const problems: string[] = [];

  beforeAll(async () => {
    startedAt = Date.now();
    app = await startDemo(
      {
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
    // Headless on a closed network, in a fresh profile of Playwright's: no sandbox (root in CI), nothing that phones home.
    browser = await chromium.launch({
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
    page = await browser.newPage({ viewport: { width: 1280, height: 1500 } });
    // Script errors and Content-Security-Policy refusals both end up here (the favicon's 404 aside).
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) problems.push(message.text());
    });
    await page.goto(`${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/queues`);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const figure = (queue: string, name: string) =>
    page.locator(`section[data-queue="${queue}"] [data-figure="${name}"]`);
  const number = async (queue: string, name: string) =>
    Number((await figure(queue, name).textContent())?.replace(/,/g, ''));

  it('shows every queue, with counters that move as the demo runs', async () => {
    await page.locator('section[data-queue="game-events"]').waitFor();
    expect(await page.locator('section[data-queue] h2').allTextContents()).toEqual([
      'game-digestFixedQueue',
      'game-eventsFixedQueue',
      'pet-feedingDelayQueue',
      'vet-checksDelayQueue',
    ]);
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
    const vet = app.get<DelayQueue>(getDelayQueueToken(VET_CHECKS));
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

    // The vet opens VET_CLOSED_MS after start-up: a check-up re-queued from then on succeeds.
    await pollUntil(() => Date.now() > startedAt + VET_CLOSED_MS + 500, 'the vet to open', 30_000, 100);
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
});
