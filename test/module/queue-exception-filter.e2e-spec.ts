import {
  Body,
  Controller,
  Delete,
  Get,
  type INestApplication,
  Injectable,
  NotFoundException,
  Param,
  Patch,
  Post,
} from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import {
  DelayConsumer,
  DelayQueue,
  InjectDelayQueue,
  QueueConfigError,
  QueueMemoryError,
  QueueExceptionFilter,
  QueueModule,
  type QueueModuleOptions,
  type TaskTime,
  UnknownQueueError,
} from 'nestjs-redis-queues';
import { freePort } from '@test/support/faults';
import { deferred, pollUntil, redisUrl, uniquePrefix } from '@test/support/testing';

class Reminder {
  @IsString() text!: string;
}

@Injectable()
class SlowHandler {
  static release = deferred();

  @DelayConsumer('reminders')
  async onReminder() {
    await SlowHandler.release.promise;
  }
}

@Controller()
class RemindersController {
  constructor(@InjectDelayQueue('reminders') private readonly reminders: DelayQueue<Reminder>) {}

  @Post('reminders/:id')
  schedule(@Param('id') id: string, @Body() body: Reminder) {
    return this.reminders.schedule(body, { id, delayMs: 3_600_000 });
  }

  @Patch('reminders/:id')
  async reschedule(@Param('id') id: string, @Body() time: TaskTime) {
    const moved = await this.reminders.reschedule(id, time);
    if (!moved) throw new NotFoundException(`no reminder ${id}`);
    return moved;
  }

  @Get('reminders/:id')
  get(@Param('id') id: string) {
    return this.reminders.get(id);
  }

  // What an application that looks queues up by a name from the URL throws for a name it does not know.
  @Get('queues/:name')
  queue(@Param('name') name: string) {
    if (name !== 'reminders') throw new UnknownQueueError(`No delay queue named "${name}" is registered`);
    return this.reminders.stats();
  }

  @Delete('queues/reminders')
  async obliterate() {
    await this.reminders.obliterate();
  }

  // What a call gets while Redis is out of memory (maxmemory reached with noeviction).
  @Get('full')
  full() {
    throw new QueueMemoryError('Redis refused the write: out of memory');
  }

  @Get('misconfigured')
  misconfigured() {
    throw new QueueConfigError('capacity must be ≥ batchSize');
  }
}

async function http(app: INestApplication, method: string, path: string, body?: unknown) {
  const response = await fetch(`${await app.getUrl()}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('QueueExceptionFilter (HTTP)', () => {
  const apps: INestApplication[] = [];

  afterEach(async () => {
    SlowHandler.release.resolve();
    await Promise.all(apps.splice(0).map((app) => app.close()));
    SlowHandler.release = deferred();
  });

  async function listen(options: Partial<QueueModuleOptions>, global: 'useGlobalFilters' | 'APP_FILTER') {
    const moduleRef = await Test.createTestingModule({
      imports: [
        QueueModule.forRoot({ connection: redisUrl(), prefix: uniquePrefix(), ...options }),
        QueueModule.registerDelayQueue({ name: 'reminders', shards: 2, schema: Reminder }),
      ],
      controllers: [RemindersController],
      providers: [
        SlowHandler,
        ...(global === 'APP_FILTER' ? [{ provide: APP_FILTER, useClass: QueueExceptionFilter }] : []),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    if (global === 'useGlobalFilters') app.useGlobalFilters(new QueueExceptionFilter());
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    return app;
  }

  it('answers 400 with the violations, 400 for bad input, 409 for a running task, 404 for an unknown queue', async () => {
    const app = await listen({}, 'useGlobalFilters');

    const invalid = await http(app, 'POST', '/reminders/r1', { text: 42 });
    expect(invalid).toEqual({
      status: 400,
      body: { statusCode: 400, error: 'Bad Request', message: [expect.stringMatching(/text must be a string/)] },
    });
    expect((await http(app, 'GET', '/queues/reminders')).body).toMatchObject({ scheduled: 0 });

    expect((await http(app, 'POST', '/reminders/r1', { text: 'stretch' })).status).toBe(201);
    const noTime = await http(app, 'PATCH', '/reminders/r1', {});
    expect(noTime).toEqual({
      status: 400,
      body: { statusCode: 400, error: 'Bad Request', message: expect.stringMatching(/needs the new time/) },
    });
    const nan = await http(app, 'PATCH', '/reminders/r1', { runAt: 'next tuesday' });
    expect(nan.status).toBe(400);
    expect(nan.body.message).toMatch(/cannot be parsed|can be parsed/);

    // Due now, and its handler holds it: moving it is a conflict.
    await http(app, 'PATCH', '/reminders/r1', { delayMs: 0 });
    await pollUntil(
      async () => (await http(app, 'GET', '/reminders/r1')).body?.state === 'active',
      'the reminder to be running',
    );
    const running = await http(app, 'PATCH', '/reminders/r1', { delayMs: 60_000 });
    expect(running).toEqual({
      status: 409,
      body: {
        statusCode: 409,
        error: 'Conflict',
        message: expect.stringMatching(/is running/),
        id: 'r1',
        state: 'active',
      },
    });

    expect(await http(app, 'GET', '/queues/nope')).toEqual({
      status: 404,
      body: { statusCode: 404, error: 'Not Found', message: 'No delay queue named "nope" is registered' },
    });
    // Its consumer runs in this application: obliterating is a conflict, naming it.
    expect(await http(app, 'DELETE', '/queues/reminders')).toEqual({
      status: 409,
      body: { statusCode: 409, error: 'Conflict', message: expect.any(String), consumers: ['SlowHandler.onReminder'] },
    });
    expect(await http(app, 'GET', '/full')).toMatchObject({ status: 503, body: { statusCode: 503 } });
    // Not the filter's: Nest's own handling answers.
    expect(await http(app, 'GET', '/misconfigured')).toEqual({
      status: 500,
      body: { statusCode: 500, message: 'Internal server error' },
    });
  });

  it('answers 503 with the outcome when Redis cannot be reached (as APP_FILTER)', async () => {
    const port = await freePort();
    const app = await listen(
      { connection: `redis://127.0.0.1:${port}`, startup: 'continue', consumers: false, commandTimeoutMs: 1000 },
      'APP_FILTER',
    );
    const unavailable = await http(app, 'POST', '/reminders/r1', { text: 'stretch' });
    expect(unavailable).toEqual({
      status: 503,
      body: {
        statusCode: 503,
        error: 'Service Unavailable',
        message: expect.stringMatching(/the call was not sent/),
        outcome: 'not-sent',
        tries: 1,
      },
    });
  });
});
