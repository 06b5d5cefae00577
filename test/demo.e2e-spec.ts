import type { NestExpressApplication } from '@nestjs/platform-express';
import {
  type DelayQueue,
  type FixedQueue,
  getDelayQueueToken,
  getFixedQueueToken,
  type GroupPausedEvent,
  type GroupResumedEvent,
  QueueEvents,
} from 'nestjs-redis-queues';
import { startDemo } from '../apps/demo/src/demo.app';
import type { DemoConfig } from '../apps/demo/src/demo.config';
import { DIGEST_TYPES, type EventType, type GameEvent } from '../apps/demo/src/games/dto/game-event.dto';
import type { GameView } from '../apps/demo/src/games/game-events.service';
import { GameSequences } from '../apps/demo/src/games/game-sequences';
import { GAME_DIGEST, GAME_EVENTS } from '../apps/demo/src/games/games.constants';
import {
  type GameStreams,
  type RecordedBatch,
  ReportSink,
  type SinkTotals,
} from '../apps/demo/src/games/upstream/report-sink';
import type { DigestTask, MealTask, PetView } from '../apps/demo/src/pets/dto/pet.dto';
import { PetDatabase } from '../apps/demo/src/pets/db/pet-database';
import { FeedingConsumer } from '../apps/demo/src/pets/feeding.consumer';
import { PET_DIGESTS, PET_FEEDING } from '../apps/demo/src/pets/pets.constants';
import { TestLogger } from './support/logs';
import { pollUntil, redisUrl, uniquePrefix } from './support/testing';

/** A pet hour lasts 200 ms: a meal 800 ms, an acceleration card takes 400 ms off. */
const SCALE = 18_000;
const HOUR = 3_600_000 / SCALE;
const MEAL = 4 * HOUR;
const THREE_MINUTES = 180_000;
/**
 * On the quiet app an owner's digest waits 6 pet hours of quiet (1.2 s), at most 15 after the first activity
 * (3 s): long beside the requests of a burst, even on a loaded machine, so that a burst is never cut short.
 */
const DIGEST_QUIET_HOURS = 6;
const DIGEST_MAX_WAIT_HOURS = 15;
const FLAKY = 'com.demo.game02';

interface Demo {
  app: NestExpressApplication;
  prefix: string;
  api: string;
  upstream: string;
}

async function boot(overrides: Partial<DemoConfig>, logger: TestLogger): Promise<Demo> {
  const prefix = uniquePrefix('demo');
  const app = await startDemo(
    {
      redisUrl: redisUrl(),
      prefix,
      port: 0,
      timeScale: SCALE,
      summaryIntervalMs: 0,
      petStory: false,
      digestIntervalMs: 300,
      ...overrides,
    },
    logger,
  );
  return { app, prefix, api: await app.getUrl(), upstream: app.get(ReportSink).url };
}

async function call<T = any>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function reports(
  demo: Demo,
  game?: string,
): Promise<{ totals: SinkTotals; streams?: GameStreams; batches: RecordedBatch[] }> {
  const query = new URLSearchParams({ limit: '20000', ...(game ? { game } : {}) });
  return (await call(demo.upstream, 'GET', `/reports?${query}`)).body;
}

async function statsOf(demo: Demo, game: string): Promise<GameView | undefined> {
  const { body } = await call<{ games: GameView[] }>(demo.api, 'GET', '/games/stats');
  return body.games.find((entry) => entry.game === game);
}

const events = (count: number, type: EventType = 'level_up', ts = Date.now()) =>
  Array.from({ length: count }, (_, i) => ({ type, userId: `u${i}`, ts, value: i }));
const sum = (batches: RecordedBatch[]) => batches.reduce((total, batch) => total + batch.count, 0);
const ms = (iso: string | null) => Date.parse(iso ?? 'missing');

describe('demo app (real redis-server)', () => {
  describe('games under simulated traffic', () => {
    let demo: Demo;
    const logs = new TestLogger();
    // The upstream refuses half of the second hottest game's reports: retries, duplicates, its digest's dead
    // letters (logged as errors), and its live stream held then resumed.
    logs.expect(new RegExp(`batch failed its last attempt and is dead-lettered group="${FLAKY}"`));
    const held: (GroupPausedEvent | GroupResumedEvent)[] = [];

    beforeAll(async () => {
      demo = await boot({ eventsPerSecond: 2000, games: 50, flakyGame: FLAKY, resumeHeldAfterMs: 300 }, logs);
      const events = demo.app.get(QueueEvents);
      for (const name of ['group.paused', 'group.resumed'] as const)
        events.on(name, (event: GroupPausedEvent | GroupResumedEvent) => held.push(event), { queue: GAME_EVENTS });
    });
    afterAll(async () => {
      await demo.app.close();
    });

    it('reports every batch with one game, at most 128 events, none older than 3 minutes', async () => {
      const { totals, batches } = await pollUntil(
        async () => {
          const received = await reports(demo);
          const full = received.batches.some((batch) => batch.kind === 'live' && batch.count === 128);
          const digest = received.batches.filter((batch) => batch.kind === 'digest').length >= 10;
          return full && digest && received.batches.length >= 100 ? received : undefined;
        },
        'full live batches and digests from the simulator',
        15_000,
        100,
      );
      for (const batch of batches) {
        expect(batch.games).toEqual([batch.game]);
        expect(batch.count).toBeGreaterThanOrEqual(1);
        expect(batch.count).toBeLessThanOrEqual(128);
        expect(batch.receivedAt - batch.oldestTs).toBeLessThanOrEqual(THREE_MINUTES);
        // Low-priority types go to the scheduled digest, the rest to the live reporter.
        expect(batch.types.every((type) => DIGEST_TYPES.has(type as EventType))).toBe(batch.kind === 'digest');
      }
      expect(totals.violations).toBe(0);
      expect(totals.largestBatch).toBe(128);

      const { body } = await call<{ games: GameView[] }>(demo.api, 'GET', '/games/stats?top=3');
      expect(body.games).toHaveLength(3);
      // Zipf popularity: the first game is the busiest by far.
      expect(body.games[0].game).toBe('com.demo.game01');
      expect(body.games[0].received).toBeGreaterThan(1.5 * body.games[1].received);
    });

    it("delivers each game's events in push order through retries, dead letters and a held game, missing none unaccounted for", async () => {
      const queues = [GAME_EVENTS, GAME_DIGEST].map((name) =>
        demo.app.get<FixedQueue<GameEvent>>(getFixedQueueToken(name)),
      );
      // Refused reports come again (some had arrived: duplicates). A live batch refused three times holds its
      // game until the demo resumes it; a digest batch is dead-lettered instead, and re-queued here, arrives
      // late, which the upstream allows for dead letters only (the digest's deaths are too rare to wait for).
      const resumed = () => held.some((event) => event.group === FLAKY && !('reason' in event));
      const totals = await pollUntil(
        async () => {
          for (const queue of queues) {
            for (const dead of await queue.deadLetters(10)) await queue.requeue(dead.id);
          }
          const received = (await reports(demo)).totals;
          return received.streams.duplicates > 0 && resumed() ? received : undefined;
        },
        'a redelivered report, and the held game resumed',
        45_000,
        200,
      );
      // Another game may be held too where the machine is so slow that its reports time out three times.
      expect(held).toContainEqual({ queue: GAME_EVENTS, group: FLAKY, reason: 'exhausted' });
      expect(await queues[0].deadLetters()).toEqual([]);
      expect(totals.refused).toBeGreaterThan(0);
      expect(totals.streams.received).toBeGreaterThan(1000);
      expect(totals.streams.outOfOrder).toBe(0);
      expect(totals.streams.unexplained).toBe(0);
      expect(totals.violations).toBe(0);

      const flaky = await reports(demo, FLAKY);
      expect(flaky.streams?.live?.received).toBeGreaterThan(0);
      expect(flaky.streams?.digest?.received).toBeGreaterThan(0);
      expect(flaky.batches.some((batch) => batch.attempt > 1)).toBe(true);

      // A game the upstream never refuses gets its live events in consecutive batches, one after another.
      const steady = await pollUntil(async () => {
        const live = (await reports(demo, 'com.demo.game01')).batches.filter((batch) => batch.kind === 'live');
        return live.length > 10 ? live : undefined;
      }, 'more than ten live reports of the busiest game');
      for (const [i, batch] of steady.entries()) {
        expect(batch.attempt).toBe(1);
        expect(batch.lastSeq! - batch.firstSeq! + 1).toBe(batch.count);
        if (i > 0) expect(batch.firstSeq).toBe(steady[i - 1].lastSeq! + 1);
      }
    });
  });

  describe('on a quiet app', () => {
    let demo: Demo;
    const logs = new TestLogger(['error', 'warn']);
    let feeding: DelayQueue<MealTask>;
    let digests: DelayQueue<DigestTask>;

    beforeAll(async () => {
      demo = await boot(
        { eventsPerSecond: 0, petDigestQuietHours: DIGEST_QUIET_HOURS, petDigestMaxWaitHours: DIGEST_MAX_WAIT_HOURS },
        logs,
      );
      feeding = demo.app.get(getDelayQueueToken(PET_FEEDING));
      digests = demo.app.get(getDelayQueueToken(PET_DIGESTS));
    });
    afterAll(async () => {
      await demo.app.close();
    });

    const post = (path: string, body?: unknown) => call(demo.api, 'POST', path, body);
    const pet = async (id: string) => (await call<PetView>(demo.api, 'GET', `/pets/${id}`)).body;
    const until = (id: string, what: string, test: (pet: PetView) => boolean) =>
      pollUntil(async () => {
        const view = await pet(id);
        return test(view) ? view : undefined;
      }, `${id} ${what}`);

    describe('games', () => {
      it('reports a burst in exact batches of 128, then the rest after a second', async () => {
        const game = 'com.test.burst';
        expect(await post(`/games/${game}/events`, events(300))).toEqual({
          status: 202,
          body: { accepted: 300, dropped: 0 },
        });
        // At-least-once: a batch leaves the queue when its handler resolves, just after it counted the batch reported.
        await pollUntil(async () => {
          const entry = await statsOf(demo, game);
          return entry?.reported === 300 && entry.pending === 0;
        }, 'the burst reported and acknowledged');
        const { batches } = await reports(demo, game);
        expect(batches.map((batch) => batch.count).sort((a, b) => a - b)).toEqual([44, 128, 128]);
        expect(batches.every((batch) => batch.kind === 'live' && batch.games.length === 1)).toBe(true);
        expect(await statsOf(demo, game)).toEqual({
          game,
          received: 300,
          pending: 0,
          reported: 300,
          batches: 3,
          dropped: 0,
          expired: 0,
          failed: 0,
        });
      });

      it('counts events older than 3 minutes as expired and never reports them', async () => {
        const game = 'com.test.stale';
        const now = Date.now();
        const body = [
          ...events(4, 'purchase', now),
          ...events(1, 'level_up', now - 170_000),
          ...events(2, 'session_start', now - 240_000),
          ...events(1, 'heartbeat', now),
          ...events(1, 'ad_view', now - 240_000),
        ];
        expect(await post(`/games/${game}/events`, body)).toMatchObject({ status: 202, body: { accepted: 9 } });
        const stats = await pollUntil(async () => {
          const entry = await statsOf(demo, game);
          return entry && entry.reported + entry.expired === 9 && entry.pending === 0 ? entry : undefined;
        }, 'every event reported or expired, and acknowledged');
        expect(stats).toMatchObject({ reported: 6, expired: 3, pending: 0 });
        const { batches } = await reports(demo, game);
        expect(sum(batches)).toBe(6);
        expect(new Set(batches.map((batch) => batch.kind))).toEqual(new Set(['live', 'digest']));
        for (const batch of batches) expect(batch.receivedAt - batch.oldestTs).toBeLessThanOrEqual(THREE_MINUTES);
        // 2 min 50 s old is still inside the window.
        expect(Math.min(...batches.map((batch) => batch.oldestTs))).toBe(now - 170_000);
      });

      it('keeps the newest 1,000 events of a game and counts the rest as dropped', async () => {
        const game = 'com.test.flood';
        const base = Date.now() - 10_000;
        const flood = Array.from({ length: 1500 }, (_, i) => ({ type: 'level_up', userId: 'u', ts: base + i }));
        expect(await post(`/games/${game}/events`, flood)).toEqual({
          status: 202,
          body: { accepted: 1500, dropped: 500 },
        });
        await pollUntil(async () => {
          const entry = await statsOf(demo, game);
          return entry?.reported === 1000 && entry.pending === 0;
        }, 'the kept events reported and acknowledged');
        const { batches } = await reports(demo, game);
        expect(batches.map((batch) => batch.count).sort((a, b) => a - b)).toEqual([
          104, 128, 128, 128, 128, 128, 128, 128,
        ]);
        expect(Math.min(...batches.map((batch) => batch.oldestTs))).toBe(base + 500);
        expect(Math.max(...batches.map((batch) => batch.newestTs))).toBe(base + 1499);
        expect(await statsOf(demo, game)).toMatchObject({ received: 1500, reported: 1000, dropped: 500, pending: 0 });
      });

      it('counts an event that arrives after a later one, or goes missing with no reason given, as a violation', async () => {
        const game = 'com.test.forged';
        logs.expect(
          /^a live report for com\.test\.forged breaks the rules/,
          /live events of com\.test\.forged are missing/,
        );
        const { run } = demo.app.get(GameSequences);
        const send = (seqs: number[], from = run) =>
          call(demo.upstream, 'POST', '/reports', {
            kind: 'live',
            game,
            events: seqs.map((seq) => ({ game, type: 'level_up', userId: 'u', ts: Date.now(), run: from, seq })),
          });
        const before = (await reports(demo)).totals.violations;

        expect((await send([1, 2])).status).toBe(204);
        expect((await send([4])).status).toBe(204);
        expect((await send([2])).status).toBe(204);
        const gap = await reports(demo, game);
        expect(gap.streams?.live).toMatchObject({ received: 3, duplicates: 1, missing: 1, unexplained: 1 });
        expect(gap.batches.map((batch) => batch.duplicates)).toEqual([0, 0, 1]);

        // 3 after 4: out of order, at once.
        expect((await send([3])).status).toBe(204);
        const late = await reports(demo, game);
        expect(late.batches.at(-1)!.violations).toEqual(['1 events arrived after later ones (3...)']);
        expect(late.streams?.live).toMatchObject({ missing: 0, outOfOrder: 1, unexplained: 0 });
        expect(late.totals.violations).toBe(before + 1);

        // 5 never comes, and no queue said why: a violation once the grace for the explanation is over.
        await send([6]);
        expect((await reports(demo)).totals.violations).toBe(before + 1);
        await pollUntil(
          async () => (await reports(demo)).totals.violations === before + 2,
          'the unexplained gap flagged',
        );

        // Events numbered by an earlier run are counted, not held to this run's order.
        const earlier = (await reports(demo)).totals.earlierRun;
        await send([9, 7], run === 'ffffffff' ? '00000000' : 'ffffffff');
        const after = (await reports(demo)).totals;
        expect(after.earlierRun).toBe(earlier + 2);
        expect(after.violations).toBe(before + 2);
        expect(logs.expected).toEqual([
          'a live report for com.test.forged breaks the rules: 1 events arrived after later ones (3...)',
          '1 live events of com.test.forged are missing, and no drop, expiry or dead letter explains them',
        ]);
        expect((await call(demo.upstream, 'POST', '/reports', { kind: 'live', game, events: [{ game }] })).status).toBe(
          400,
        );
      });

      it('refuses invalid events with 400 and the violations, and stores none of them', async () => {
        const queues = () => call<{ queues: Record<string, { pushed: number }> }>(demo.api, 'GET', '/games/stats');
        const before = (await queues()).body.queues;
        const game = 'com.test.invalid';
        const good = { type: 'level_up', userId: 'u1' };

        const mixed = await post(`/games/${game}/events`, [good, { type: 'jump', userId: '' }, good]);
        expect(mixed.status).toBe(400);
        expect(mixed.body.message).toEqual([
          expect.stringMatching(/^\[1\]\.type must be one of the following values: session_start/),
          expect.stringMatching(/^\[1\]\.userId must be longer than or equal to 1 characters/),
        ]);
        const single = await post(`/games/${game}/events`, { userId: 'u1', ts: -5, cheat: true });
        expect(single.status).toBe(400);
        expect(single.body.message).toEqual(
          expect.arrayContaining([
            'property cheat should not exist',
            expect.stringMatching(/^type must be/),
            'ts must not be less than 0',
          ]),
        );
        expect((await post(`/games/${game}/events`, [])).body.message).toEqual([
          'send 1 to 2000 events per request, got 0',
        ]);
        expect((await post(`/games/${game}/events`, events(2001))).status).toBe(400);
        expect((await post(`/games/${game}/events`, [good, 7])).body.message).toEqual(['[1] must be an event object']);
        const badGame = await post(`/games/${encodeURIComponent('no spaces!')}/events`, good);
        expect(badGame.status).toBe(400);
        expect(badGame.body.message).toEqual([expect.stringMatching(/^game must be a package name/)]);
        expect((await call(demo.api, 'GET', '/games/stats?top=0')).status).toBe(400);

        expect((await queues()).body.queues).toMatchObject({
          [GAME_EVENTS]: { pushed: before[GAME_EVENTS].pushed },
          [GAME_DIGEST]: { pushed: before[GAME_DIGEST].pushed },
        });
        expect(await statsOf(demo, game)).toBeUndefined();
        expect(await demo.app.get<FixedQueue<GameEvent>>(getFixedQueueToken(GAME_EVENTS)).size(game)).toBe(0);
      });
    });

    describe('pets', () => {
      it('makes a fed pet hungry after 4 pet hours, not before', async () => {
        const fed = await post('/pets/rex/feed');
        expect(fed.status).toBe(201);
        expect(fed.body).toMatchObject({ id: 'rex', state: 'eating', meal: 1, fedBy: 'owner', cards: { autoFeed: 0 } });
        const start = ms(fed.body.mealStartedAt);
        expect(ms(fed.body.mealEndsAt) - start).toBe(MEAL);
        expect((await post('/pets/rex/feed')).status).toBe(409);

        const hungry = await until('rex', 'hungry', (view) => view.state === 'hungry');
        expect(ms(hungry.hungrySince) - start).toBeGreaterThanOrEqual(MEAL);
        expect(ms(hungry.hungrySince) - start).toBeLessThan(MEAL + 2 * HOUR);
        expect(hungry).toMatchObject({ meal: 1, mealEndsAt: null, history: { meals: 1, autoFed: 0, accelerated: 0 } });
        // The handler's effect is visible before its acknowledgement is written: wait for the ack.
        await pollUntil(async () => (await feeding.get('hungry:rex')) === null, 'the task to be acknowledged');
        expect((await post('/pets/rex/feed')).body).toMatchObject({ state: 'eating', meal: 2 });
      });

      it('ends the meal 2 hours sooner with an acceleration card', async () => {
        const fed = await post('/pets/luna/feed');
        const start = ms(fed.body.mealStartedAt);
        const accelerated = await post('/pets/luna/cards/accelerate');
        expect(accelerated.status).toBe(200);
        expect(ms(accelerated.body.mealEndsAt) - start).toBe(2 * HOUR);
        expect(accelerated.body.history.accelerated).toBe(1);

        const hungry = await until('luna', 'hungry', (view) => view.state === 'hungry');
        expect(ms(hungry.hungrySince) - start).toBeGreaterThanOrEqual(2 * HOUR);
        expect(ms(hungry.hungrySince) - start).toBeLessThan(MEAL);
      });

      it('makes a pet hungry at once when the card moves the end into the past', async () => {
        const fed = await post('/pets/kiwi/feed');
        const start = ms(fed.body.mealStartedAt);
        await pollUntil(() => Date.now() >= start + 2.5 * HOUR, '2.5 pet hours into the meal');
        const accelerated = await post('/pets/kiwi/cards/accelerate');
        expect(accelerated.status).toBe(200);
        expect(ms(accelerated.body.mealEndsAt)).toBe(start + 2 * HOUR);

        const hungry = await until('kiwi', 'hungry', (view) => view.state === 'hungry');
        expect(ms(hungry.hungrySince) - start).toBeGreaterThanOrEqual(2.5 * HOUR);
        expect(ms(hungry.hungrySince) - start).toBeLessThan(MEAL);
      });

      it('feeds a pet holding an auto-feed card once more, and uses the card', async () => {
        const fed = await post('/pets/milo/feed');
        const start = ms(fed.body.mealStartedAt);
        const card = await post('/pets/milo/cards/auto-feed');
        expect(card.status).toBe(200);
        expect(card.body.cards).toEqual({ autoFeed: 1 });
        expect((await post('/pets/milo/cards/auto-feed')).status).toBe(409);

        const second = await until('milo', 'auto-fed', (view) => view.meal === 2);
        expect(second).toMatchObject({
          state: 'eating',
          fedBy: 'auto-feed',
          cards: { autoFeed: 0 },
          history: { meals: 2, autoFed: 1 },
        });
        expect(ms(second.mealStartedAt) - start).toBeGreaterThanOrEqual(MEAL);
        expect(ms(second.mealEndsAt) - ms(second.mealStartedAt)).toBe(MEAL);

        const hungry = await until('milo', 'hungry', (view) => view.state === 'hungry');
        expect(hungry).toMatchObject({
          meal: 2,
          mealEndsAt: null,
          cards: { autoFeed: 0 },
          history: { meals: 2, autoFed: 1 },
        });
        expect(ms(hungry.hungrySince) - ms(second.mealStartedAt)).toBeGreaterThanOrEqual(MEAL);
        expect(await feeding.get('hungry:milo')).toBeNull();
      });

      it('changes nothing when a meal-end task is delivered again', async () => {
        const consumer = demo.app.get(FeedingConsumer);
        const deliver = (meal: number) =>
          consumer.onMealEnd(
            { petId: 'oscar', meal },
            {
              queue: PET_FEEDING,
              id: 'hungry:oscar',
              attempt: 2,
              dueAt: 0,
              runAt: 0,
              firedAt: 0,
              signal: new AbortController().signal,
            },
          );
        // The owner's digest goes out on its own timer, whenever it falls.
        const stable = ({ mealEndsIn: _, digest: __, ...view }: PetView) => view;
        await post('/pets/oscar/feed');
        await post('/pets/oscar/cards/auto-feed');
        const second = await until('oscar', 'auto-fed', (view) => view.meal === 2);
        const next = await feeding.get('hungry:oscar');
        expect(next).toMatchObject({ state: 'scheduled', payload: { petId: 'oscar', meal: 2 } });

        await deliver(1);
        expect(stable(await pet('oscar'))).toEqual(stable(second));
        expect(await feeding.get('hungry:oscar')).toEqual(next);

        // The delivery that auto-fed the pet died before scheduling the next meal: a redelivery does it.
        await feeding.cancel('hungry:oscar');
        await deliver(1);
        expect(await feeding.get('hungry:oscar')).toEqual(next);
        expect(stable(await pet('oscar'))).toEqual(stable(second));

        const hungry = await until('oscar', 'hungry', (view) => view.state === 'hungry');
        await deliver(2);
        await deliver(1);
        expect(stable(await pet('oscar'))).toEqual(stable(hungry));
        expect(await feeding.get('hungry:oscar')).toBeNull();
      });

      it('sends the owner one digest for a burst of activity, once the pet has been quiet a while', async () => {
        const quiet = DIGEST_QUIET_HOURS * HOUR;
        const fed = await post('/pets/coco/feed');
        const firstDue = ms(fed.body.digest.dueAt);
        // Refused (coco is eating): no activity, nothing counted.
        expect((await post('/pets/coco/feed')).status).toBe(409);
        const accelerated = await post('/pets/coco/cards/accelerate');
        expect(accelerated.status).toBe(200);
        // Each activity pushes the digest back.
        const due = ms(accelerated.body.digest.dueAt);
        expect(due).toBeGreaterThan(firstDue);
        expect(accelerated.body.digest).toMatchObject({ sent: 0, last: null });

        const sent = await until('coco', 'sent a digest', (view) => view.digest.sent > 0);
        const digest = sent.digest.last!;
        expect(digest).toMatchObject({ fed: 1, accelerated: 1, autoFeedCards: 0, autoFed: 0 });
        expect(ms(digest.dueAt)).toBe(due);
        expect(ms(digest.dueAt) - ms(digest.lastAt)).toBeGreaterThanOrEqual(quiet);
        expect(ms(digest.sentAt)).toBeGreaterThanOrEqual(due);
        expect(ms(digest.firstAt)).toBeLessThan(ms(digest.lastAt));
        // One digest for the burst: none is waiting, and none comes after it.
        await pollUntil(async () => (await digests.get('digest:coco')) === null, 'the digest to be acknowledged');
        expect((await pet('coco')).digest).toEqual({ dueAt: null, sent: 1, last: digest });
      });

      it('sends the digest of activity that never pauses no later than the maximum wait after its first', async () => {
        const [quiet, maxWait] = [DIGEST_QUIET_HOURS * HOUR, DIGEST_MAX_WAIT_HOURS * HOUR];
        const fed = await post('/pets/pip/feed');
        // The first schedule opened the window: its task is due one quiet period after the window's start.
        const windowStart = ms(fed.body.digest.dueAt) - quiet;
        let activities = 1;
        const busy = async () => {
          if ((await post('/pets/pip/feed')).status === 201) return true;
          return (await post('/pets/pip/cards/accelerate')).status === 200;
        };
        // An activity every 100 ms or so, until the digest goes out or long after it should have.
        const deadline = windowStart + maxWait + 2 * quiet;
        while ((await pet('pip')).digest.sent === 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          if (await busy()) activities++;
        }
        // The burst goes on after the digest: the next activity opens a window of its own.
        for (let more = 0; more < 3;) if (await busy()) more++;

        const view = await until('pip', 'sent a digest', (pip) => pip.digest.sent > 0);
        const digest = view.digest.last!;
        expect(ms(digest.dueAt)).toBe(windowStart + maxWait);
        expect(ms(digest.sentAt)).toBeGreaterThanOrEqual(windowStart + maxWait);
        const counted = digest.fed + digest.accelerated;
        expect(counted).toBeGreaterThan(2);
        expect(counted).toBeLessThanOrEqual(activities);
        expect(ms(view.digest.dueAt)).toBeGreaterThan(ms(digest.dueAt));
      });

      it('refuses invalid requests and stores nothing for them', async () => {
        const invalid = await post('/pets/no%20spaces!/feed');
        expect(invalid.status).toBe(400);
        expect(invalid.body.message).toEqual(['id must be 1-64 letters, digits, "_" or "-"']);
        expect((await post(`/pets/${'x'.repeat(65)}/feed`)).status).toBe(400);
        expect((await call(demo.api, 'GET', '/pets/ghost')).status).toBe(404);
        expect((await post('/pets/ghost/cards/accelerate')).status).toBe(404);
        expect((await post('/pets/ghost/cards/auto-feed')).status).toBe(404);

        await post('/pets/bella/feed');
        await until('bella', 'hungry', (view) => view.state === 'hungry');
        const { digest: _, ...before } = await pet('bella');
        expect((await post('/pets/bella/cards/accelerate')).status).toBe(409);
        expect((await post('/pets/bella/cards/auto-feed')).status).toBe(409);
        expect(await pet('bella')).toMatchObject(before);

        const { db, pets: table } = demo.app.get(PetDatabase);
        const pets = (await db.select({ id: table.id }).from(table)).map((row) => row.id);
        expect(pets).toContain('bella');
        expect(pets).not.toContain('ghost');
        expect(pets.some((id) => id.includes(' ') || id.length > 64)).toBe(false);
        expect(await feeding.get('hungry:ghost')).toBeNull();
      });
    });
  });
});
