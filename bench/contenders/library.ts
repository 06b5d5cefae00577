import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext, type LogLevel, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  BatchConsumer,
  type BatchContext,
  DelayConsumer,
  type DelayContext,
  DelayQueue,
  type DelayQueueOptions,
  FixedQueue,
  type FixedQueueOptions,
  getDelayQueueToken,
  getFixedQueueToken,
  QueueModule,
} from 'nestjs-redis-queues';

export const LIBRARY = 'nestjs-redis-queues';

export interface LibraryAppOptions {
  url: string;
  prefix: string;
  fixed?: FixedQueueOptions;
  delay?: DelayQueueOptions;
  /** Consumer classes (see `batchConsumer` / `delayConsumer`); none makes a producer-only app. */
  consumers?: Type[];
  idlePollMs?: number;
  /** What the application logs. Default: errors. */
  logLevels?: LogLevel[];
}

@Module({})
class BenchModule {}

/** A Nest application context as a user would build it: QueueModule.forRoot plus the queues, no HTTP. */
export async function libraryApp(options: LibraryAppOptions): Promise<INestApplicationContext> {
  const consumers = options.consumers ?? [];
  return NestFactory.createApplicationContext(
    {
      module: BenchModule,
      imports: [
        QueueModule.forRoot({
          connection: options.url,
          prefix: options.prefix,
          consumers: consumers.length > 0,
          ...(options.idlePollMs !== undefined ? { idlePollMs: options.idlePollMs } : {}),
        }),
        ...(options.fixed ? [QueueModule.registerFixedQueue(options.fixed)] : []),
        ...(options.delay ? [QueueModule.registerDelayQueue(options.delay)] : []),
      ],
      providers: consumers,
    },
    { logger: options.logLevels ?? ['error'] },
  );
}

export const fixedQueueOf = <T>(app: INestApplicationContext, name: string) =>
  app.get<FixedQueue<T>>(getFixedQueueToken(name));
export const delayQueueOf = <T>(app: INestApplicationContext, name: string) =>
  app.get<DelayQueue<T>>(getDelayQueueToken(name));

// Decorator options are fixed when a class is declared, so each scenario declares its own consumer class.

export function batchConsumer<T>(
  queue: string,
  concurrency: number,
  sink: (messages: T[], ctx: BatchContext) => unknown,
  raw = false,
): Type {
  @Injectable()
  class BenchBatchConsumer {
    @BatchConsumer(queue, { concurrency, raw })
    handle(messages: T[], ctx: BatchContext) {
      return sink(messages, ctx);
    }
  }
  return BenchBatchConsumer;
}

export function delayConsumer<T>(
  queue: string,
  concurrency: number,
  sink: (payload: T, ctx: DelayContext) => unknown,
): Type {
  @Injectable()
  class BenchDelayConsumer {
    @DelayConsumer(queue, { concurrency })
    handle(payload: T, ctx: DelayContext) {
      return sink(payload, ctx);
    }
  }
  return BenchDelayConsumer;
}
