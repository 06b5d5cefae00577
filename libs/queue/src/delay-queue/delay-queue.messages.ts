/** The texts of DelayQueue's errors, in one place. */

export const occurrenceNotPlaced = (id: string, status: string) =>
  `the next occurrence of repeat "${id}" could not be placed (${status}); it is retried`;
