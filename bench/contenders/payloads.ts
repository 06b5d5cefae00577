/** A game event as the seed articles describe them, padded so its JSON is `bytes` long. */
export interface GameEvent {
  type: string;
  game: string;
  player: string;
  seq: number;
  at: number;
  score: number;
  pad: string;
}

export function gameEvents(count: number, bytes = 200): GameEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const event: GameEvent = {
      type: i % 3 === 0 ? 'kill' : 'score',
      game: `game-${i}`,
      player: `player-${(i * 7919) % 100_000}`,
      seq: i,
      at: 1_700_000_000_000 + i * 37,
      score: (i * 31) % 10_000,
      pad: '',
    };
    event.pad = 'x'.repeat(Math.max(0, bytes - JSON.stringify(event).length));
    return event;
  });
}
