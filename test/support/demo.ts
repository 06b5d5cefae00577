/** Every queue the demo registers, in name order: its dashboard's cards and its health's queues. */
export const DEMO_QUEUES = [
  'game-digest',
  'game-events',
  'pet-digests',
  'pet-feeding',
  'recurring.games.backlog-audit',
  // The pet-feeding queue's periodic task source pass (its reconcile option) is a recurring schedule.
  'recurring.reconcile.pet-feeding',
  'vet-checks',
];
