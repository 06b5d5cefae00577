import type { LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { resolveDemoConfig, type DemoConfig } from './demo.config';
import { MAX_EVENTS_PER_REQUEST } from './games/games.constants';

/** Creates the demo application for a configuration and listens on its host and port. */
export async function startDemo(
  overrides: Partial<DemoConfig>,
  logger: LoggerService | LogLevel[] | false,
): Promise<NestExpressApplication> {
  const config = resolveDemoConfig(overrides);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), { logger });
  // Express' default of 100 kB would refuse a request of MAX_EVENTS_PER_REQUEST events.
  app.useBodyParser('json', { limit: `${Math.ceil((MAX_EVENTS_PER_REQUEST * 512) / 1024)}kb` });
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  return app;
}
