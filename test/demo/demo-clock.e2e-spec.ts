import { Global, Module, type Type, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import {
  type DelayQueue,
  getDelayQueueToken,
  QueueClock,
  QueueExceptionFilter,
  QueueModule,
} from 'nestjs-redis-queues';
import { DemoConfig, resolveDemoConfig } from '../../apps/demo/src/demo.config';
import { PetDatabase } from '../../apps/demo/src/pets/db/pet-database';
import type { DigestTask, MealTask, PetView } from '../../apps/demo/src/pets/dto/pet.dto';
import { FeedingConsumer } from '../../apps/demo/src/pets/feeding.consumer';
import { PET_DIGESTS, PET_FEEDING } from '../../apps/demo/src/pets/pets.constants';
import { PetsModule } from '../../apps/demo/src/pets/pets.module';
import { TestLogger } from '@test/support/logs';
import { uniquePrefix } from '@test/support/testing';
import { DEMO_DATABASE } from '@test/support/demo';

/** Pet time is real time here (scale 1): the memory clock stands still, and the test moves it by pet hours. */
const HOUR = 3_600_000;
const MEAL = 4 * HOUR;
const DIGEST_QUIET_HOURS = 6;
const DIGEST_MAX_WAIT_HOURS = 15;

/**
 * The demo's pets on `memory://`, their time moved by QueueClock.advance: the pets module alone (rows in
 * PGlite, meals and digests as delayed tasks), as the demo app builds it, without the games, whose live
 * traffic would keep handlers running while the clock waits for them to settle.
 */
describe('demo: pets on memory://, on a clock the test moves', () => {
  let app: NestExpressApplication;
  let api: string;
  let clock: QueueClock;
  let feeding: DelayQueue<MealTask>;
  let digests: DelayQueue<DigestTask>;
  const logs = new TestLogger(['error', 'warn']);

  beforeAll(async () => {
    const config = resolveDemoConfig({
      ...DEMO_DATABASE,
      redisUrl: 'memory://',
      prefix: uniquePrefix('demo'),
      timeScale: 1,
      petStory: false,
      petDigestQuietHours: DIGEST_QUIET_HOURS,
      petDigestMaxWaitHours: DIGEST_MAX_WAIT_HOURS,
      // No periodic pass over the pets table within the simulated days here (demo-database tests the record):
      // on memory:// a pass holds the clock's step for about 2 s of wall time.
      petReconcileMs: 365 * 24 * HOUR,
    });
    const moduleRef = await Test.createTestingModule({
      imports: [
        demoConfigModule(config),
        QueueModule.forRoot({ connection: config.redisUrl, prefix: config.prefix }),
        PetsModule,
      ],
      providers: [
        {
          provide: APP_PIPE,
          useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }),
        },
        { provide: APP_FILTER, useClass: QueueExceptionFilter },
      ],
    })
      .setLogger(logs)
      .compile();
    app = moduleRef.createNestApplication<NestExpressApplication>({ logger: logs });
    await app.listen(0, '127.0.0.1');
    api = await app.getUrl();
    clock = app.get(QueueClock);
    feeding = app.get(getDelayQueueToken(PET_FEEDING));
    digests = app.get(getDelayQueueToken(PET_DIGESTS));
  });
  afterAll(async () => {
    await app?.close();
  });

  async function call<T = any>(method: string, path: string): Promise<{ status: number; body: T }> {
    const response = await fetch(`${api}${path}`, { method });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }
  const post = (path: string) => call<PetView>('POST', path);
  const pet = async (id: string) => (await call<PetView>('GET', `/pets/${id}`)).body;
  const ms = (iso: string | null) => Date.parse(iso ?? 'missing');

  it('makes a fed pet hungry after 4 pet hours, not before', async () => {
    const fed = await post('/pets/rex/feed');
    expect(fed.status).toBe(201);
    expect(fed.body).toMatchObject({ id: 'rex', state: 'eating', meal: 1, fedBy: 'owner', cards: { autoFeed: 0 } });
    const start = ms(fed.body.mealStartedAt);
    expect(start).toBe(await clock.now());
    expect(ms(fed.body.mealEndsAt) - start).toBe(MEAL);
    expect(fed.body.mealEndsIn).toBe('4h 00m');
    expect((await post('/pets/rex/feed')).status).toBe(409);

    await clock.advance(MEAL - 1);
    expect(await pet('rex')).toMatchObject({ state: 'eating', mealEndsIn: '0h 00m' });
    await clock.advance(1);
    const hungry = await pet('rex');
    expect(hungry).toMatchObject({ state: 'hungry', meal: 1, mealEndsAt: null, history: { meals: 1, autoFed: 0 } });
    expect(ms(hungry.hungrySince)).toBe(start + MEAL);
    // advance resolved once the handler settled, its acknowledgement written.
    expect(await feeding.get('hungry:rex')).toBeNull();
    expect((await post('/pets/rex/feed')).body).toMatchObject({ state: 'eating', meal: 2 });
  });

  it('ends the meal 2 hours sooner with an acceleration card', async () => {
    const fed = await post('/pets/luna/feed');
    const start = ms(fed.body.mealStartedAt);
    await clock.advance(HOUR);
    const accelerated = await post('/pets/luna/cards/accelerate');
    expect(accelerated.status).toBe(200);
    expect(ms(accelerated.body.mealEndsAt) - start).toBe(2 * HOUR);
    expect(accelerated.body).toMatchObject({ mealEndsIn: '1h 00m', history: { accelerated: 1 } });

    await clock.advance(HOUR - 1);
    expect((await pet('luna')).state).toBe('eating');
    await clock.advance(1);
    const hungry = await pet('luna');
    expect(hungry.state).toBe('hungry');
    expect(ms(hungry.hungrySince)).toBe(start + 2 * HOUR);
  });

  it('makes a pet hungry at once when the card moves the end into the past', async () => {
    const fed = await post('/pets/kiwi/feed');
    const start = ms(fed.body.mealStartedAt);
    await clock.advance(2.5 * HOUR);
    const accelerated = await post('/pets/kiwi/cards/accelerate');
    expect(accelerated.status).toBe(200);
    expect(ms(accelerated.body.mealEndsAt)).toBe(start + 2 * HOUR);

    await clock.advance(0);
    const hungry = await pet('kiwi');
    expect(hungry.state).toBe('hungry');
    expect(ms(hungry.hungrySince)).toBe(start + 2.5 * HOUR);
  });

  it('feeds a pet holding an auto-feed card once more, and uses the card', async () => {
    const fed = await post('/pets/milo/feed');
    const start = ms(fed.body.mealStartedAt);
    const card = await post('/pets/milo/cards/auto-feed');
    expect(card.status).toBe(200);
    expect(card.body.cards).toEqual({ autoFeed: 1 });
    expect((await post('/pets/milo/cards/auto-feed')).status).toBe(409);

    await clock.advance(MEAL);
    const second = await pet('milo');
    expect(second).toMatchObject({
      state: 'eating',
      meal: 2,
      fedBy: 'auto-feed',
      cards: { autoFeed: 0 },
      history: { meals: 2, autoFed: 1 },
    });
    expect(ms(second.mealStartedAt)).toBe(start + MEAL);
    expect(ms(second.mealEndsAt)).toBe(start + 2 * MEAL);

    await clock.advance(MEAL);
    const hungry = await pet('milo');
    expect(hungry).toMatchObject({
      state: 'hungry',
      meal: 2,
      mealEndsAt: null,
      cards: { autoFeed: 0 },
      history: { meals: 2, autoFed: 1 },
    });
    expect(ms(hungry.hungrySince)).toBe(start + 2 * MEAL);
    expect(await feeding.get('hungry:milo')).toBeNull();
  });

  it('changes nothing when a meal-end task is delivered again', async () => {
    const consumer = app.get(FeedingConsumer);
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
    const stable = ({ digest: _, ...view }: PetView) => view;
    await post('/pets/oscar/feed');
    await post('/pets/oscar/cards/auto-feed');
    await clock.advance(MEAL);
    const second = await pet('oscar');
    expect(second).toMatchObject({ meal: 2, fedBy: 'auto-feed' });
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

    await clock.advance(MEAL);
    const hungry = await pet('oscar');
    expect(hungry.state).toBe('hungry');
    await deliver(2);
    await deliver(1);
    expect(stable(await pet('oscar'))).toEqual(stable(hungry));
    expect(await feeding.get('hungry:oscar')).toBeNull();
  });

  it('sends the owner one digest for a burst of activity, once the pet has been quiet a while', async () => {
    const quiet = DIGEST_QUIET_HOURS * HOUR;
    const fed = await post('/pets/coco/feed');
    const firstDue = ms(fed.body.digest.dueAt);
    expect(firstDue - ms(fed.body.mealStartedAt)).toBe(quiet);
    // Refused (coco is eating): no activity, nothing counted.
    expect((await post('/pets/coco/feed')).status).toBe(409);
    await clock.advance(HOUR);
    const accelerated = await post('/pets/coco/cards/accelerate');
    expect(accelerated.status).toBe(200);
    // Each activity pushes the digest back.
    const due = ms(accelerated.body.digest.dueAt);
    expect(due).toBe(firstDue + HOUR);
    expect(accelerated.body.digest).toMatchObject({ sent: 0, last: null });

    await clock.advance(quiet - 1);
    expect((await pet('coco')).digest.sent).toBe(0);
    await clock.advance(1);
    const { digest } = await pet('coco');
    // One digest for the burst, sent on time: none is waiting, and none comes after it.
    expect(digest).toEqual({ dueAt: null, sent: 1, last: expect.anything() });
    expect(digest.last).toMatchObject({ fed: 1, accelerated: 1, autoFeedCards: 0, autoFed: 0 });
    expect(ms(digest.last!.dueAt)).toBe(due);
    expect(ms(digest.last!.sentAt)).toBe(due);
    expect(ms(digest.last!.lastAt)).toBe(due - quiet);
    expect(ms(digest.last!.firstAt)).toBe(due - quiet - HOUR);
    expect(await digests.get('digest:coco')).toBeNull();
  });

  it('sends the digest of activity that never pauses no later than the maximum wait after its first', async () => {
    const [quiet, maxWait] = [DIGEST_QUIET_HOURS * HOUR, DIGEST_MAX_WAIT_HOURS * HOUR];
    const fed = await post('/pets/pip/feed');
    const windowStart = ms(fed.body.digest.dueAt) - quiet;
    let activities = 1;
    // An activity every pet hour (a feeding when pip is hungry, else an acceleration card), never quiet for long.
    while ((await pet('pip')).digest.sent === 0 && (await clock.now()) < windowStart + maxWait + quiet) {
      await clock.advance(HOUR);
      if ((await post('/pets/pip/feed')).status === 201 || (await post('/pets/pip/cards/accelerate')).status === 200)
        activities++;
    }
    const view = await pet('pip');
    const digest = view.digest.last!;
    expect(ms(digest.dueAt)).toBe(windowStart + maxWait);
    expect(ms(digest.sentAt)).toBe(windowStart + maxWait);
    // The first activity, and one an hour until the window closed: the digest went out as the clock reached
    // its end, before the activity of that hour.
    expect(digest.fed + digest.accelerated).toBe(DIGEST_MAX_WAIT_HOURS);
    expect(activities).toBe(DIGEST_MAX_WAIT_HOURS + 1);
    // The activity at the window's end came after its digest went out, and opened a window of its own.
    expect(ms(view.digest.dueAt)).toBe(windowStart + maxWait + quiet);
  });

  it('refuses invalid requests and stores nothing for them', async () => {
    const invalid = await post('/pets/no%20spaces!/feed');
    expect(invalid.status).toBe(400);
    expect((invalid.body as unknown as { message: string[] }).message).toEqual([
      'id must be 1-64 letters, digits, "_" or "-"',
    ]);
    expect((await post(`/pets/${'x'.repeat(65)}/feed`)).status).toBe(400);
    expect((await call('GET', '/pets/ghost')).status).toBe(404);
    expect((await post('/pets/ghost/cards/accelerate')).status).toBe(404);
    expect((await post('/pets/ghost/cards/auto-feed')).status).toBe(404);

    await post('/pets/bella/feed');
    await clock.advance(MEAL);
    const { digest: _, ...before } = await pet('bella');
    expect(before.state).toBe('hungry');
    expect((await post('/pets/bella/cards/accelerate')).status).toBe(409);
    expect((await post('/pets/bella/cards/auto-feed')).status).toBe(409);
    expect(await pet('bella')).toMatchObject(before);

    const { db, pets: table } = app.get(PetDatabase);
    const pets = (await db.select({ id: table.id }).from(table)).map((row) => row.id);
    expect(pets).toContain('bella');
    expect(pets).not.toContain('ghost');
    expect(pets.some((id) => id.includes(' ') || id.length > 64)).toBe(false);
    expect(await feeding.get('hungry:ghost')).toBeNull();
  });
});

/** DemoConfig for every module, as the demo's AppModule provides it. */
function demoConfigModule(config: DemoConfig): Type {
  @Global()
  @Module({ providers: [{ provide: DemoConfig, useValue: config }], exports: [DemoConfig] })
  class DemoConfigModule {}
  return DemoConfigModule;
}
