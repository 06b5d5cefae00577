import { Injectable, Logger } from '@nestjs/common';
import { DelayConsumer, type DelayContext } from 'nestjs-redis-queues';
import { DemoConfig } from '../demo.config';
import { DemoClock } from './demo-clock';
import { DigestTask } from './dto/pet.dto';
import { type Digest, PetStore } from './pet.store';
import { HOUR_MS, PET_DIGESTS } from './pets.constants';

const counted = (count: number, one: string, many = `${one}s`) =>
  count > 0 ? [`${count} ${count === 1 ? one : many}`] : [];

/**
 * Sends an owner the digest of a pet's activity when its `digest:<petId>` task fires: each feeding or
 * card pushed the task back (a debounced schedule, see PetsService.scheduleDigest), so a burst of activity
 * gives one digest, once the pet has been quiet a while or at the latest the maximum wait after the first.
 * Delivery is at-least-once: the digest is taken from the pet's row in one transaction, and a repeated delivery
 * finds nothing left to send.
 */
@Injectable()
export class DigestConsumer {
  private readonly logger = new Logger('Pets');

  constructor(
    private readonly store: PetStore,
    private readonly clock: DemoClock,
    private readonly config: DemoConfig,
  ) {}

  @DelayConsumer(PET_DIGESTS, { concurrency: 4 })
  async send({ petId }: DigestTask, ctx: DelayContext): Promise<void> {
    const digest = await this.store.takeDigest(petId, ctx.runAt, await this.clock.now());
    if (!digest) {
      this.logger.debug(`${petId}: no activity left to sum up (delivery ${ctx.attempt})`);
      return;
    }
    const clock = this.clock;
    const quiet = clock.real(this.config.petDigestQuietHours * HOUR_MS);
    // Due before a quiet period had passed since the last activity: the maximum wait cut the burst short.
    const when =
      digest.dueAt - digest.lastAt < quiet
        ? `sent ${clock.format(digest.dueAt - digest.firstAt)} after the first of it, the longest a digest waits`
        : `sent after ${clock.format(digest.dueAt - digest.lastAt)} of quiet`;
    this.logger.log(
      `digest for ${petId}'s owner: ${summary(digest)} in ${clock.format(digest.lastAt - digest.firstAt)}, ${when}`,
    );
  }
}

function summary(digest: Digest): string {
  return [
    ...counted(digest.fed, 'feeding'),
    ...counted(digest.accelerated, 'acceleration card'),
    ...counted(digest.autoFeedCards, 'auto-feed card'),
    ...counted(digest.autoFed, 'automatic feeding'),
  ].join(', ');
}
