import type { NestExpressApplication } from '@nestjs/platform-express';
import IORedis from 'ioredis';
import { type DelayQueue, getDelayQueueToken } from 'nestjs-redis-queues';
import type { MealTask, PetView } from '../../apps/demo/src/pets/dto/pet.dto';
import { type Pet, PetStore } from '../../apps/demo/src/pets/pet.store';
import { PET_FEEDING } from '../../apps/demo/src/pets/pets.constants';
import { type RedisServer, startRedis } from '@test/support/faults';
import { TestLogger } from '@test/support/logs';
import { pollUntil } from '@test/support/testing';
import { startTestDemo } from '@test/support/demo';

/** A pet hour lasts 100 s: a meal is longer than this whole file, so that none ends on its own. */
const SCALE = 36;
const HOUR = 3_600_000 / SCALE;

/**
 * The pets table is the record of the pet-feeding queue: an owner's action commits the pet's row, then
 * writes its task, and the queue's task source rebuilds from the rows what Redis lacks. On a Redis of its
 * own, which the tests empty and restart.
 */
describe('demo: pets in PostgreSQL, the record of their meals', () => {
  let server: RedisServer;
  let app: NestExpressApplication;
  let api: string;
  let feeding: DelayQueue<MealTask>;
  let store: PetStore;
  let redis: IORedis;
  // The games' queues, idle here, may be found without their record after the flush and the restart; a pass
  // that starts while the restarted Redis is not connected yet fails, and the next one restores.
  const logs = new TestLogger();
  logs.expect(/its record was missing/, /^Task source PetMeals\.meals \(its data was lost\) failed/);

  beforeAll(async () => {
    server = await startRedis();
    app = await startTestDemo({ redisUrl: server.url, timeScale: SCALE, eventsPerSecond: 0 }, logs);
    api = await app.getUrl();
    feeding = app.get(getDelayQueueToken(PET_FEEDING));
    store = app.get(PetStore);
    redis = new IORedis(server.url);
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    redis.disconnect();
    await app?.close();
    await server?.stop();
  });

  const post = async (path: string) => {
    const response = await fetch(`${api}${path}`, { method: 'POST' });
    return { status: response.status, body: (await response.json()) as PetView };
  };
  const row = async (id: string): Promise<Pet> => (await store.get(id))!;
  /** The meal's task as the row says it should be. */
  const mealTask = (pet: Pet) => ({
    state: 'scheduled',
    runAt: pet.hungryAt,
    payload: { petId: pet.id, meal: pet.meals },
  });
  const scheduleFailsOnce = () =>
    jest.spyOn(feeding, 'schedule').mockRejectedValueOnce(new Error('Redis did not answer (simulated)'));

  it("commits the pet's row before it writes the meal's task", async () => {
    const seen: (Pet | null)[] = [];
    const schedule = feeding.schedule.bind(feeding);
    jest.spyOn(feeding, 'schedule').mockImplementation(async (payload, options) => {
      seen.push(await store.get((payload as MealTask).petId));
      return schedule(payload, options);
    });
    const fed = await post('/pets/rex/feed');
    expect(fed.status).toBe(201);
    expect(seen).toEqual([expect.objectContaining({ id: 'rex', eating: true, meals: 1 })]);
    expect(await feeding.get('hungry:rex')).toMatchObject(mealTask(await row('rex')));
    expect(fed.body.mealEndsAt).toBe(new Date((await row('rex')).hungryAt!).toISOString());
  });

  it('keeps the committed row when the task cannot be written, and the task source brings the meal back', async () => {
    scheduleFailsOnce();
    const fed = await post('/pets/luna/feed');
    // The meal started: the row says so, and the answer too.
    expect(fed.status).toBe(201);
    expect(fed.body).toMatchObject({ state: 'eating', meal: 1 });
    const pet = await row('luna');
    expect(pet).toMatchObject({ eating: true, meals: 1 });
    expect(await feeding.get('hungry:luna')).toBeNull();

    const pass = await feeding.reconcile();
    expect(pass.restored).toBe(1);
    expect(pass.listed).toBeGreaterThanOrEqual(2);
    expect(await feeding.get('hungry:luna')).toMatchObject(mealTask(pet));
  });

  it("moves a task that is later than its row, an acceleration whose write failed, to the row's time", async () => {
    const fed = await post('/pets/milo/feed');
    const start = Date.parse(fed.body.mealStartedAt);
    scheduleFailsOnce();
    const accelerated = await post('/pets/milo/cards/accelerate');
    expect(accelerated.status).toBe(200);
    expect(Date.parse(accelerated.body.mealEndsAt!)).toBe(start + 2 * HOUR);
    expect(await feeding.get('hungry:milo')).toMatchObject({ runAt: start + 4 * HOUR });

    // The queue's reconcile option has onExists 'earlier': the row's earlier time wins, the others are kept.
    const pass = await feeding.reconcile();
    expect(pass).toMatchObject({ restored: 1, kept: pass.listed - 1 });
    expect(await feeding.get('hungry:milo')).toMatchObject({ ...mealTask(await row('milo')), runAt: start + 2 * HOUR });
  });

  /** Every meal under way has its task, as its row says. */
  const everyMealBack = async (ids: string[], what: string) => {
    const pets = await Promise.all(ids.map(row));
    return pollUntil(
      async () => {
        const tasks = await Promise.all(ids.map((id) => feeding.get(`hungry:${id}`)));
        return tasks.every((task, i) => task?.runAt === pets[i].hungryAt) ? tasks : undefined;
      },
      what,
      45_000,
      50,
    );
  };

  it('brings every meal back when Redis is emptied (FLUSHALL)', async () => {
    const ids = ['rex', 'luna', 'milo'];
    for (const id of ['kiwi', 'coco']) expect((await post(`/pets/${id}/feed`)).status).toBe(201);
    ids.push('kiwi', 'coco');
    await everyMealBack(ids, 'every meal scheduled');
    await redis.flushall();
    const tasks = await everyMealBack(ids, 'every meal back after FLUSHALL');
    expect(tasks.map((task) => task!.payload)).toEqual(
      await Promise.all(ids.map(async (id) => ({ petId: id, meal: (await row(id)).meals }))),
    );
  });

  it('brings every meal back when Redis restarts without its data', async () => {
    const ids = ['rex', 'luna', 'milo', 'kiwi', 'coco'];
    const { port } = server;
    await server.kill('SIGKILL');
    server = await startRedis({ port });
    await everyMealBack(ids, 'every meal back after the restart');
    // The pets, their rows, never left.
    expect((await post('/pets/rex/feed')).status).toBe(409);
  });
});
