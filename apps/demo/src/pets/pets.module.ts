import { Module } from '@nestjs/common';
import { QueueModule } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { PetDatabase } from './db/pet-database';
import { DemoClock } from './demo-clock';
import { DigestConsumer } from './digest.consumer';
import { DigestTask, MealTask } from './dto/pet.dto';
import { FeedingConsumer } from './feeding.consumer';
import { PetMeals } from './pet-meals.source';
import { PetStory } from './pet-story';
import { PetStore } from './pet.store';
import { PET_DIGESTS, PET_FEEDING, VET_CHECKS } from './pets.constants';
import { PetsController } from './pets.controller';
import { PetsService } from './pets.service';
import { VetConsumer } from './vet.consumer';

/**
 * Pets: rows in PostgreSQL; meals as delayed tasks that cards move, and owners' activity digests as debounced
 * ones.
 */
@Module({
  imports: [
    // The pets table is the record (PetMeals lists it). 'earlier': a task later than its row, an acceleration
    // whose write failed after the row moved, is moved to the row's time; running and dead ones are kept.
    QueueModule.registerDelayQueueAsync({
      name: PET_FEEDING,
      inject: [DemoConfig],
      useFactory: (config: DemoConfig) => ({
        schema: MealTask,
        reconcile: { everyMs: config.petReconcileMs, onExists: 'earlier' },
      }),
    }),
    QueueModule.registerDelayQueue({ name: PET_DIGESTS, schema: DigestTask }),
    // Fails fast while the vet is closed, so the dashboard soon has dead letters to show.
    QueueModule.registerDelayQueue({ name: VET_CHECKS, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 500 } }),
  ],
  controllers: [PetsController],
  providers: [
    { provide: PetDatabase, inject: [DemoConfig], useFactory: (config: DemoConfig) => PetDatabase.open(config) },
    DemoClock,
    PetStore,
    PetMeals,
    PetsService,
    FeedingConsumer,
    DigestConsumer,
    VetConsumer,
    PetStory,
  ],
})
export class PetsModule {}
