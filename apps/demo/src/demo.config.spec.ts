import { loadDemoConfig } from './demo.config';

describe('loadDemoConfig', () => {
  it('takes the flaky game from DEMO_FLAKY_GAME, com.demo.game010 when unset', () => {
    expect(loadDemoConfig({}).flakyGame).toBe('com.demo.game010');
    expect(loadDemoConfig({ DEMO_FLAKY_GAME: 'none' }).flakyGame).toBe('none');
  });

  it('refuses a flaky game that is no game name, naming the variable', () => {
    expect(() => loadDemoConfig({ DEMO_FLAKY_GAME: 'no spaces!' })).toThrow(
      'Invalid demo configuration: DEMO_FLAKY_GAME="no spaces!": flakyGame must be a game name',
    );
  });
});
