import { loadDemoConfig } from './demo.config';

describe('loadDemoConfig', () => {
  it('takes the flaky game from DEMO_FLAKY_GAME, com.demo.game010 when unset', () => {
    expect(loadDemoConfig({}).flakyGame).toBe('com.demo.game010');
    expect(loadDemoConfig({ DEMO_FLAKY_GAME: 'none' }).flakyGame).toBe('none');
  });

  it('resumes a held game after DEMO_RESUME_HELD_S seconds, 10 when unset', () => {
    expect(loadDemoConfig({}).resumeHeldAfterMs).toBe(10_000);
    expect(loadDemoConfig({ DEMO_RESUME_HELD_S: '2.5' }).resumeHeldAfterMs).toBe(2500);
    expect(loadDemoConfig({ DEMO_RESUME_HELD_S: '0' }).resumeHeldAfterMs).toBe(0);
  });

  it("takes the pets' digest quiet and maximum wait in pet hours, 5 and 7 when unset", () => {
    expect(loadDemoConfig({})).toMatchObject({ petDigestQuietHours: 5, petDigestMaxWaitHours: 7 });
    expect(loadDemoConfig({ DEMO_PET_DIGEST_QUIET_H: '0.5', DEMO_PET_DIGEST_MAX_WAIT_H: '12' })).toMatchObject({
      petDigestQuietHours: 0.5,
      petDigestMaxWaitHours: 12,
    });
    expect(() => loadDemoConfig({ DEMO_PET_DIGEST_QUIET_H: '0' })).toThrow(
      /DEMO_PET_DIGEST_QUIET_H="0": petDigestQuietHours must be a positive number/,
    );
  });

  it('keeps the pets in PGlite unless DATABASE_URL names a PostgreSQL server', () => {
    expect(loadDemoConfig({}).databaseUrl).toBeUndefined();
    expect(loadDemoConfig({ DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/pets' }).databaseUrl).toBe(
      'postgres://u:p@127.0.0.1:5432/pets',
    );
    expect(() => loadDemoConfig({ DATABASE_URL: 'mysql://127.0.0.1/pets' })).toThrow(
      'Invalid demo configuration: DATABASE_URL="mysql://127.0.0.1/pets": databaseUrl must be a postgres:// or postgresql:// URL',
    );
  });

  it('checks the pet-feeding queue against the pets table every DEMO_PET_RECONCILE_S seconds, 60 when unset', () => {
    expect(loadDemoConfig({}).petReconcileMs).toBe(60_000);
    expect(loadDemoConfig({ DEMO_PET_RECONCILE_S: '5' }).petReconcileMs).toBe(5000);
    expect(() => loadDemoConfig({ DEMO_PET_RECONCILE_S: '0.5' })).toThrow(
      /DEMO_PET_RECONCILE_S="0.5": petReconcileMs must not be less than 1000/,
    );
  });

  it('refuses a flaky game that is no game name, naming the variable', () => {
    expect(() => loadDemoConfig({ DEMO_FLAKY_GAME: 'no spaces!' })).toThrow(
      'Invalid demo configuration: DEMO_FLAKY_GAME="no spaces!": flakyGame must be a game name',
    );
  });
});
