import { Injectable } from '@nestjs/common';
import { type SourcedTask, TaskSource } from 'nestjs-redis-queues';
import type { MealTask } from './dto/pet.dto';
import { PetStore } from './pet.store';
import { hungryTaskId, PET_FEEDING } from './pets.constants';

/**
 * The pet-feeding queue's record, read from the pets table: the end of every meal under way. The queue
 * runs it when Redis comes back without its data (a restart without persistence, FLUSHALL), every
 * `petReconcileMs`, and on `reconcile()`; each pass writes the meals Redis lacks, so a meal whose task
 * could not be written after its row was committed comes back too.
 */
@Injectable()
export class PetMeals {
  constructor(private readonly store: PetStore) {}

  @TaskSource(PET_FEEDING)
  async *meals(): AsyncIterable<SourcedTask<MealTask>> {
    for await (const { id, meal, hungryAt } of this.store.mealsUnderWay())
      yield { id: hungryTaskId(id), runAt: hungryAt, payload: { petId: id, meal } };
  }
}
