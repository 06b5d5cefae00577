import { fencingToken } from './fencing-token';

describe('fencingToken', () => {
  it('is 12 characters of base64url, never the field separator', () => {
    for (let i = 0; i < 1000; i++) expect(fencingToken()).toMatch(/^[A-Za-z0-9_-]{12}$/);
  });

  it('does not repeat', () => {
    const tokens = new Set(Array.from({ length: 100_000 }, fencingToken));
    expect(tokens.size).toBe(100_000);
  });
});
