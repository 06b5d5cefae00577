import { SetMetadata } from '@nestjs/common';
import { RECURRING_METADATA } from '../queue.constants';
import type { RecurringOptions, RecurringOptionsFactory } from '../interfaces';

/**
 * Runs a provider method on a schedule, once per tick across every process of the application (a
 * distributed `@Cron`): `(ctx: RecurringContext)`. `{ cron, tz? }` or `{ everyMs }`; ticks are computed
 * from the schedule and fall due by Redis' clock. Needs only `QueueModule.forRoot`. At least once:
 * a run that throws, times out or dies is retried for the same tick. Options from configuration:
 * `{ name?, inject: [ConfigService], useFactory: (config) => ({ cron: ... }) }`, resolved at start-up.
 * See docs/recurring.md.
 */
export const Recurring = (options: RecurringOptions | RecurringOptionsFactory): MethodDecorator =>
  SetMetadata<string, RecurringOptions | RecurringOptionsFactory>(RECURRING_METADATA, options);
