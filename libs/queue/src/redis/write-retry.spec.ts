import { QueueConnectionError, QueueInputError } from '../errors';
import { LateTry } from './call-keys';
import { WriteRetries } from './write-retry';

const notSent = () => new QueueConnectionError('Redis could not be reached (refused)', { outcome: 'not-sent' });
const unknown = () => new QueueConnectionError('Redis did not answer (timeout)', { outcome: 'unknown' });

/** A call that fails with each of `failures` in turn, then resolves with the number of tries. */
function flaky(failures: Error[]) {
  let tries = 0;
  return {
    call: async () => {
      tries++;
      if (tries <= failures.length) throw failures[tries - 1];
      return tries;
    },
    tries: () => tries,
  };
}

describe('WriteRetries', () => {
  it('tries once without a budget', async () => {
    const { call, tries } = flaky([notSent()]);
    await expect(new WriteRetries().run('cancel(id)', 0, call)).rejects.toMatchObject({ tries: 1 });
    expect(tries()).toBe(1);
  });

  it('tries again after connection errors until one answers', async () => {
    const { call } = flaky([notSent(), unknown(), notSent()]);
    await expect(new WriteRetries().run('cancel(id)', 5000, call)).resolves.toBe(4);
  });

  it('passes on any other error at once: it is an answer', async () => {
    const refused = new QueueInputError('bad id');
    const { call, tries } = flaky([notSent(), refused]);
    await expect(new WriteRetries().run('cancel(id)', 5000, call)).rejects.toBe(refused);
    expect(tries()).toBe(2);
  });

  it('gives up once its budget is spent, unknown when any try may have reached Redis', async () => {
    const started = Date.now();
    const { call, tries } = flaky(Array.from({ length: 100 }, (_, i) => (i === 1 ? unknown() : notSent())));
    const error = (await new WriteRetries()
      .run('cancel(id)', 300, call)
      .catch((e: unknown) => e)) as QueueConnectionError;
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(error).toBeInstanceOf(QueueConnectionError);
    expect(error.outcome).toBe('unknown');
    expect(error.tries).toBe(tries());
    // 50, 100, 200 ms pauses fit in 300 ms with the last cut short: four or five tries, fewer on a machine
    // so loaded that the pauses' timers fire late (three seen), never more.
    expect(tries()).toBeGreaterThanOrEqual(2);
    expect(tries()).toBeLessThanOrEqual(5);
    expect(error.message).toMatch(
      /^cancel\(id\): tried \d+ times over \d+ ms \(retryMs: 300\), Redis answered none; a try may have reached Redis/,
    );
  });

  it('ends at a try Redis refused as late, unknown: an earlier try may have been applied', async () => {
    const { call, tries } = flaky([notSent(), unknown(), new LateTry(), notSent()]);
    const error = (await new WriteRetries()
      .run('push(group, message, options)', 60_000, call)
      .catch((e: unknown) => e)) as QueueConnectionError;
    expect(tries()).toBe(3);
    expect(error).toBeInstanceOf(QueueConnectionError);
    expect(error).not.toBeInstanceOf(LateTry);
    expect(error).toMatchObject({ outcome: 'unknown', tries: 3 });
    expect(error.cause).toBeInstanceOf(LateTry);
    expect(error.message).toMatch(
      /^push\(group, message, options\): tried 3 times over \d+ ms \(retryMs: 60000\); the try reached Redis after its call's window .* wrote nothing: the call may or may not have been applied$/,
    );
  });

  it('stops pausing at shutdown: a call retrying ends with its last error', async () => {
    const retries = new WriteRetries();
    const { call } = flaky(Array.from({ length: 100 }, notSent));
    const retrying = retries.run('cancel(id)', 60_000, call).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 100));
    retries.close();
    const error = (await retrying) as QueueConnectionError;
    expect(error.outcome).toBe('not-sent');
    await retries.drain();
  });
});
