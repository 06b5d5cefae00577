import { Controller, Injectable, Scope } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { BatchConsumer, DelayConsumer, OnQueueEvent, TaskSource } from './decorators';
import { QueueConfigError } from './errors';
import { QueueExplorer } from './queue.explorer';
import { QueueMetadataAccessor } from './queue-metadata.accessor';

class ByClass {
  @BatchConsumer('events', { concurrency: 2 })
  report() {}
}

class ByValue {
  @DelayConsumer('tasks')
  run() {}

  @TaskSource('tasks')
  *list() {}
}

class ByFactory {
  @OnQueueEvent('task.dead', { queue: 'tasks' })
  dead() {}
}

@Controller()
class WithHandler {
  @BatchConsumer('events')
  collect() {}
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @DelayConsumer('tasks')
  run() {}
}

class Plain {
  notAConsumer() {}
}

async function explore(providers: Parameters<typeof Test.createTestingModule>[0]) {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule],
    ...providers,
    providers: [QueueExplorer, QueueMetadataAccessor, ...(providers.providers ?? [])],
  }).compile();
  moduleRef.useLogger(false);
  return moduleRef.get(QueueExplorer).explore();
}

describe('QueueExplorer', () => {
  it('finds handlers of useClass, useValue and useFactory providers and of controllers', async () => {
    const found = await explore({
      providers: [
        ByClass,
        { provide: 'by-value', useValue: new ByValue() },
        { provide: 'by-factory', useFactory: () => new ByFactory() },
        Plain,
      ],
      controllers: [WithHandler],
    });
    expect(found.batchConsumers.map(({ label, metadata }) => [label, metadata])).toEqual(
      expect.arrayContaining([
        ['ByClass.report', { queue: 'events', options: { concurrency: 2 } }],
        ['WithHandler.collect', { queue: 'events', options: {} }],
      ]),
    );
    expect(found.batchConsumers).toHaveLength(2);
    expect(found.delayConsumers.map(({ label, method }) => [label, method])).toEqual([['ByValue.run', 'run']]);
    expect(found.eventHandlers.map(({ label, metadata }) => [label, metadata])).toEqual([
      ['ByFactory.dead', { event: 'task.dead', queue: 'tasks' }],
    ]);
    expect(found.delayConsumers[0].instance).toBeInstanceOf(ByValue);
    expect(found.taskSources.map(({ label, metadata }) => [label, metadata])).toEqual([
      ['ByValue.list', { queue: 'tasks' }],
    ]);
  });

  it('counts a provider reached through an alias once', async () => {
    const found = await explore({ providers: [ByClass, { provide: 'alias', useExisting: ByClass }] });
    expect(found.batchConsumers.map(({ label }) => label)).toEqual(['ByClass.report']);
  });

  it('refuses a consumer on a request-scoped provider, which no request would ever create', async () => {
    const exploring = explore({ providers: [PerRequest] });
    await expect(exploring).rejects.toThrow(QueueConfigError);
    await expect(exploring).rejects.toThrow(
      /^@DelayConsumer on PerRequest\.run: a request-scoped provider .* cannot consume queues/,
    );
  });

  it('skips providers whose value is not an object', async () => {
    const found = await explore({
      providers: [
        { provide: 'nothing', useValue: null },
        { provide: 'text', useValue: 'a string' },
        { provide: 'bare', useValue: Object.create(null) },
      ],
    });
    expect(found).toEqual({
      batchConsumers: [],
      delayConsumers: [],
      eventHandlers: [],
      recurring: [],
      taskSources: [],
    });
  });
});
