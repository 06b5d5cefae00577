import { Module } from '@nestjs/common';
import { QueueModule } from 'nestjs-redis-queues';
import { DemoClock } from './demo-clock';
import { MealTask } from './dto/pet.dto';
import { FeedingConsumer } from './feeding.consumer';
import { PetStory } from './pet-story';
import { PetStore } from './pet.store';
import { PET_FEEDING } from './pets.constants';
import { PetsController } from './pets.controller';
import { PetsService } from './pets.service';

/** Pets: meals as delayed tasks that cards move. */
@Module({
  imports: [QueueModule.registerDelayQueue({ name: PET_FEEDING, schema: MealTask })],
  controllers: [PetsController],
  providers: [DemoClock, PetStore, PetsService, FeedingConsumer, PetStory],
})
export class PetsModule {}
