import { SubscriberHeartbeat } from './subscriber-heartbeat';

/** A connection whose PINGs the test answers (or not), one promise per PING sent. */
function connection() {
  const pings: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const state = { ready: true, stalls: 0 };
  const heartbeat = new SubscriberHeartbeat({
    ping: () => new Promise<void>((resolve, reject) => pings.push({ resolve, reject })),
    ready: () => state.ready,
    stalled: () => state.stalls++,
    everyMs: 1000,
    deadlineMs: 500,
  });
  return { heartbeat, pings, state };
}

describe('SubscriberHeartbeat', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('pings every interval and stays quiet while the replies come in time', async () => {
    const { heartbeat, pings, state } = connection();
    heartbeat.start();
    expect(heartbeat.lastReplyAgoMs).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1000);
    for (let beat = 1; beat <= 3; beat++) {
      expect(pings).toHaveLength(beat);
      await jest.advanceTimersByTimeAsync(400);
      pings[beat - 1].resolve();
      await jest.advanceTimersByTimeAsync(600);
      expect(heartbeat.lastReplyAgoMs).toBe(600);
    }
    expect(state.stalls).toBe(0);
    heartbeat.stop();
  });

  it('calls a PING unanswered past its deadline a stall, once, and sends no second PING meanwhile', async () => {
    const { heartbeat, pings, state } = connection();
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(1000);
    expect(pings).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(499);
    expect(state.stalls).toBe(0);
    // Decided one event-loop turn after the deadline, so that a reply already received is read first.
    await jest.advanceTimersByTimeAsync(2);
    expect(state.stalls).toBe(1);
    // A reply to the stalled PING, arriving late, settles nothing: the next PING has its own deadline.
    pings[0].resolve();
    await jest.advanceTimersByTimeAsync(500);
    expect(pings).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(502);
    expect(state.stalls).toBe(2);
    heartbeat.stop();
  });

  it('sends nothing while the connection is not ready, and a refused PING is no stall', async () => {
    const { heartbeat, pings, state } = connection();
    state.ready = false;
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(3000);
    expect(pings).toHaveLength(0);
    state.ready = true;
    await jest.advanceTimersByTimeAsync(1000);
    pings[0].reject(new Error('Connection is closed.'));
    await jest.advanceTimersByTimeAsync(1000);
    expect(state.stalls).toBe(0);
    expect(pings).toHaveLength(2);
    heartbeat.stop();
  });

  it('stops: no PING, no stall after stop()', async () => {
    const { heartbeat, pings, state } = connection();
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(1000);
    heartbeat.stop();
    await jest.advanceTimersByTimeAsync(5000);
    expect(pings).toHaveLength(1);
    expect(state.stalls).toBe(0);
  });
});
