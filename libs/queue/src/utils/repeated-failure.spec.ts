import { RepeatedFailure } from './repeated-failure';

describe('RepeatedFailure', () => {
  function setUp() {
    let now = 1_000;
    const lines: string[] = [];
    const failure = new RepeatedFailure(
      {
        first: (error) => lines.push(`first ${error}`),
        summary: (count, sinceMs, last) => lines.push(`summary ${count} ${sinceMs} ${last}`),
        recovered: (count, sinceMs) => lines.push(`recovered ${count} ${sinceMs}`),
      },
      10_000,
      () => now,
    );
    return { failure, lines, advance: (ms: number) => (now += ms) };
  }

  it('logs the first failure, one summary per period with a count, and the recovery', () => {
    const { failure, lines, advance } = setUp();
    // 8 s of failures every 50 ms: one line, not 160.
    for (let i = 0; i < 160; i++) {
      failure.failed(`refused ${i}`);
      advance(50);
    }
    expect(lines).toEqual(['first refused 0']);
    // Past 10 s: one summary of what was left out since the first line.
    for (let i = 160; i < 220; i++) {
      failure.failed(`refused ${i}`);
      advance(50);
    }
    expect(lines).toEqual(['first refused 0', 'summary 200 10000 refused 200']);
    failure.succeeded();
    expect(lines[2]).toBe('recovered 220 11000');
    expect(failure.isFailing).toBe(false);
  });

  it('starts a new run after a recovery, and says nothing when nothing failed', () => {
    const { failure, lines, advance } = setUp();
    failure.succeeded();
    expect(lines).toEqual([]);
    failure.failed('a');
    failure.succeeded();
    advance(5);
    failure.failed('b');
    expect(lines).toEqual(['first a', 'recovered 1 0', 'first b']);
  });
});
