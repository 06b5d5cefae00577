import { Module } from '@nestjs/common';
import { QueueModule } from 'nestjs-redis-queues';

@Module({
  imports: [
    QueueModule.forRoot({ connection: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }),
    QueueModule.registerFixedQueue({ name: 'game-events', capacity: 1000, batchSize: 128, maxAgeMs: 180_000 }),
  ],
})
export class AppModule {}
