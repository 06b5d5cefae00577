/** Every queue the demo registers, in name order: its dashboard's cards and its health's queues. */
export const DEMO_QUEUES = [
  'game-digest',
  'game-events',
  'pet-digests',
  'pet-feeding',
  'recurring.games.backlog-audit',
  'vet-checks',
];
