import { QueueConfigError, QueueInputError, QueueSchemaError } from '../errors';

/** The errors of option, payload and time validation, their texts in one place. */

/** A call's argument refused: `what` names it, `problem` says why. */
export const badArgument = (what: string, problem: string) => new QueueInputError(`${what} ${problem}`);

export const badCallOptions = (call: string, problems: string[]) =>
  new QueueInputError(`${call}: ${problems.join('; ')}`);

export const badOptions = (label: string, problems: string[]) =>
  new QueueConfigError(`Invalid options for ${label}: ${problems.join('; ')}`);

export const notAnOptionsObject = (label: string, raw: unknown) =>
  new QueueConfigError(`Invalid options for ${label}: expected an object, got ${raw === null ? 'null' : typeof raw}`);

export const badConnection = (problem: string) =>
  new QueueConfigError(`Invalid options for QueueModule.forRoot: connection${problem}`);

export const notSerialisable = (queue: string, why: string) =>
  new QueueInputError(`Payload for queue "${queue}" is not JSON-serialisable: ${why}`);

export const payloadTooLarge = (queue: string, bytes: number, limit: number) =>
  new QueueInputError(
    `Payload for queue "${queue}" is ${bytes} bytes serialised; the limit (maxPayloadBytes) is ${limit}`,
  );

export const notAnObjectPayload = (queue: string, schema: string, value: unknown) =>
  new QueueSchemaError(`Payload for queue "${queue}" must be an object matching ${schema}`, [
    `expected an object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`,
  ]);

export const schemaViolated = (queue: string, schema: string, violations: string[]) =>
  new QueueSchemaError(`Payload for queue "${queue}" does not match ${schema}: ${violations.join('; ')}`, violations);

export const badLimit = (max: number, value: unknown) =>
  new QueueInputError(
    `limit must be an integer from 1 to ${max}, got ${typeof value === 'number' ? value : typeof value}`,
  );

/** A time refused: its message alone, the caller's words. */
export const badTime = (message: string) => new QueueInputError(message);

/** Logged at start-up when an option was given under its former name. */
export const formerNameRead = (label: string, former: string, advice: string, current: string): string =>
  `${label}: ${former} is deprecated, use ${advice} (it is read as ${current} meanwhile)`;
