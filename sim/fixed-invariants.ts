/**
 * The promises of FixedQueue's per-group controls the simulation checks (sim/fixed.ts), with the
 * sentence of docs/fixed-queue.md each checks; docs/guarantees.md links each here by its name. The
 * delivery promises every mode shares are in invariants.ts, whose `violated` names these too.
 */
export const FIXED_GUARANTEES = {
  'group-rate-limit': {
    where: 'fixed-queue.md, A rate per group',
    quote:
      '`groupRateLimit: { max, durationMs }` lets at most `max` batches of one group start in any `durationMs`, across every consumer and process (... an at-least-once retry is a start too)',
  },
  'acked-kept': {
    where: 'fixed-queue.md, Delivery of batches: At least once',
    quote:
      'A claimed batch stays at the head of its group until its handler resolves; the acknowledgement then removes exactly the messages that delivery still owns.',
  },
  'partial-acked-kept': {
    where: 'fixed-queue.md, Acknowledging part of a batch',
    quote:
      'An upstream that accepted the first 100 events of 128 has taken those: delivering them again would duplicate them. ... the first `n` messages are acknowledged (counted in `delivered`)',
  },
  'partial-rest-first': {
    where: 'fixed-queue.md, Acknowledging part of a batch',
    quote: "the rest come back first, in order, as the batch's next attempt",
  },
} as const;
