import { ConsoleLogger } from '@nestjs/common';

/** Nest's start-up chatter (a line per module and route) would bury the story the demo tells. */
const FRAMEWORK = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

export class StoryLogger extends ConsoleLogger {
  override log(message: unknown, ...rest: unknown[]): void {
    const context = rest.at(-1) ?? this.context;
    if (typeof context === 'string' && FRAMEWORK.has(context)) return;
    super.log(message, ...rest);
  }
}
