import { IsInt, Matches, Min } from 'class-validator';

const PET_ID = /^[A-Za-z0-9_-]{1,64}$/;
const PET_ID_RULE = { message: 'id must be 1-64 letters, digits, "_" or "-"' };

export class PetParams {
  @Matches(PET_ID, PET_ID_RULE)
  id!: string;
}

/** Payload of a `hungry:<petId>` task: which meal ends, so that a late or repeated delivery can tell. */
export class MealTask {
  @Matches(PET_ID, PET_ID_RULE)
  petId!: string;

  @IsInt()
  @Min(1)
  meal!: number;
}

/** Payload of a `digest:<petId>` task: whose activity to sum up (the pet's hash holds it). */
export class DigestTask {
  @Matches(PET_ID, PET_ID_RULE)
  petId!: string;
}

/** What a digest told the owner: the activity since the previous one, and when it was sent. */
export interface DigestView {
  fed: number;
  accelerated: number;
  autoFeedCards: number;
  autoFed: number;
  /** The first and the last activity it sums up. */
  firstAt: string;
  lastAt: string;
  /** When its debounced task was due, and when it was sent. */
  dueAt: string;
  sentAt: string;
}

export interface PetView {
  id: string;
  state: 'eating' | 'hungry';
  /** Number of the current (or last) meal. */
  meal: number;
  fedBy: 'owner' | 'auto-feed';
  mealStartedAt: string;
  /** When the current meal ends (real time), or null when the pet is not eating. */
  mealEndsAt: string | null;
  /** The same in pet time, for people: `1h 59m`. */
  mealEndsIn: string | null;
  hungrySince: string | null;
  cards: { autoFeed: number };
  history: { meals: number; autoFed: number; accelerated: number };
  /** The owner's activity digest: when the next is due (null: no activity since the last), and the last sent. */
  digest: { dueAt: string | null; sent: number; last: DigestView | null };
}
