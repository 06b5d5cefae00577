import { QueueConfigError, QueueError, QueueInputError } from '../errors';

/** The errors of `@Recurring`, their texts in one place. */

export const nameTaken = (where: string, name: string, other: string) =>
  new QueueConfigError(`${where}: the name "${name}" is already used by @Recurring on ${other}`);

export const stillDeclared = (name: string, label: string) =>
  new QueueInputError(`"${name}" is still declared by @Recurring on ${label}: remove the decorator first`);

export const clockAdrift = (name: string) =>
  new QueueError(`@Recurring "${name}": Redis' clock kept moving away from this process' estimate`);

export const noTickAfterNow = (name: string, schedule: string) =>
  new QueueError(`@Recurring "${name}": its schedule ${schedule} has no tick after now`);

export const refusedAsInput = (where: string, cause: Error) =>
  new QueueConfigError(`${where}: ${cause.message}`, { cause });

export const injectWithoutFactory = (where: string) =>
  new QueueConfigError(
    `${where}: inject is given without useFactory: add useFactory: (...injected) => ({ cron } or { everyMs })`,
  );
