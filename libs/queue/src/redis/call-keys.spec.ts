import { callKey, IDEMPOTENCY_WINDOW_MS } from './call-keys';

describe('callKey', () => {
  const heard = { known: true, estimate: () => 1_800_000_000_000 };

  it('gives none to a call that reaches Redis once', () => {
    expect(callKey('push', 'g', 0, 3000, undefined, heard)).toBeUndefined();
  });

  it("gives a retried call a deadline in Redis' time: now by the clock, plus retryMs and one commandTimeoutMs", () => {
    const a = callKey('push', 'g', 10_000, 3000, undefined, heard)!;
    const b = callKey('push', 'g', 10_000, 3000, undefined, heard)!;
    expect(a).toMatchObject({ windowMs: 13_000, deadline: 1_800_000_013_000 });
    expect(a.name).not.toBe(b.name);
  });

  it('gives none before the process has heard from Redis: its own clock may be far from it', () => {
    const call = callKey('push', 'g', 10_000, 3000, undefined, { known: false, estimate: () => Date.now() })!;
    expect(call.windowMs).toBe(13_000);
    expect(call.deadline).toBeUndefined();
  });

  it("gives none to an application's idempotency key, whose calls may come at any time", () => {
    const call = callKey('push', 'g', 10_000, 3000, 'order-1', heard)!;
    expect(call).toEqual({
      name: callKey('push', 'g', 0, 3000, 'order-1', heard)!.name,
      windowMs: IDEMPOTENCY_WINDOW_MS,
    });
    expect(callKey('cancel', 'g', 0, 3000, 'order-1', heard)!.name).not.toBe(call.name);
  });
});
