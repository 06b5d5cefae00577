export const PET_FEEDING = 'pet-feeding';

export const HOUR_MS = 3_600_000;
/** In demo time: a pet eats for 4 hours... */
export const MEAL_MS = 4 * HOUR_MS;
/** ...and an acceleration card takes 2 of them off. */
export const ACCELERATION_MS = 2 * HOUR_MS;

/** One task per pet, addressable by the pet, so that a card can move it. */
export const hungryTaskId = (petId: string): string => `hungry:${petId}`;

export const VET_CHECKS = 'vet-checks';

/** One check-up per pet. */
export const vetCheckId = (petId: string): string => `vet:${petId}`;

export const PET_DIGESTS = 'pet-digests';

/**
 * One digest per pet, addressable by the pet: each activity schedules it again (debounced), so a burst of
 * activity gives one digest.
 */
export const digestTaskId = (petId: string): string => `digest:${petId}`;
