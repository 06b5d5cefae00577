import { SetMetadata } from '@nestjs/common';
import { TASK_SOURCE_METADATA } from '../queue.constants';

export interface TaskSourceMetadata {
  queue: string;
}

/**
 * Makes a provider method the task source of a DelayQueue: it lists the tasks the queue should hold,
 * from the application's own records, as an `AsyncIterable` or `Iterable` of
 * `{ id, runAt? | delayMs?, payload }` (an async generator over a database cursor, so that a million
 * rows stream through in bounded memory). The queue runs it when its data is found lost (once across
 * every process), every `reconcile.everyMs` / `reconcile.cron` if given, and on `queue.reconcile()`;
 * each listed task is written with `onExists: 'keep'` by default, so what Redis holds is left alone.
 * One per DelayQueue. See docs/delay-queue.md, "Task source".
 *
 * ```ts
 * @TaskSource('pet-feeding')
 * async *meals() {
 *   for await (const pet of this.pets.hungryLater()) yield { id: `hungry:${pet.id}`, runAt: pet.nextMealAt, payload: { petId: pet.id } };
 * }
 * ```
 */
export const TaskSource = (queue: string): MethodDecorator =>
  SetMetadata<string, TaskSourceMetadata>(TASK_SOURCE_METADATA, { queue });
