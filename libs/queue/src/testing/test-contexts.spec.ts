import { createBatchContext, createDelayContext } from 'nestjs-redis-queues/testing';

describe('test contexts', () => {
  /** Exactly these fields (none missing, none more): a first attempt on 'queue', its signal not aborted. */
  function expectFirstDelivery(ctx: { signal: AbortSignal }, fields: object): void {
    expect(ctx).toEqual({ queue: 'queue', attempt: 1, signal: expect.any(AbortSignal), ...fields });
    expect(ctx.signal.aborted).toBe(false);
  }

  it('builds a complete first delivery of a batch, with a signal that is not aborted', () => {
    expectFirstDelivery(createBatchContext(), { group: 'group', expired: 0, claimedAt: expect.any(Number) });
  });

  it('builds a complete first delivery of a task, due when it was claimed', () => {
    const ctx = createDelayContext();
    expectFirstDelivery(ctx, { id: 'task', dueAt: ctx.firedAt, runAt: ctx.firedAt, firedAt: expect.any(Number) });
  });

  it('takes any field from the test, the signal included', () => {
    const controller = new AbortController();
    const batch = createBatchContext({ queue: 'game-events', group: 'game-1', attempt: 3, signal: controller.signal });
    const task = createDelayContext({ id: 'hungry:milo', runAt: 0, signal: controller.signal });
    controller.abort();
    expect(batch).toMatchObject({ queue: 'game-events', group: 'game-1', attempt: 3, expired: 0 });
    expect(task).toMatchObject({ id: 'hungry:milo', runAt: 0, attempt: 1 });
    expect(batch.signal.aborted && task.signal.aborted).toBe(true);
  });

  it('gives each context a signal of its own', () => {
    expect(createBatchContext().signal).not.toBe(createBatchContext().signal);
  });
});
