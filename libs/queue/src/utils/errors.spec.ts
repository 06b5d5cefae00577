import { describeError, errorDetail, failureText, MAX_ERROR_TEXT } from './errors';

describe('describeError', () => {
  it("gives an Error's message and any other value's text", () => {
    expect(describeError(new TypeError('bad input'))).toBe('bad input');
    expect(describeError('plain text')).toBe('plain text');
    expect(describeError(42)).toBe('42');
    expect(describeError(undefined)).toBe('undefined');
  });

  it('describes values String() cannot convert instead of throwing', () => {
    expect(describeError(Object.create(null))).toBe('[object Object]');
    const hostile = {
      toString() {
        throw new Error('no');
      },
    };
    expect(describeError(hostile)).toBe('[object Object]');
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(describeError(revoked.proxy)).toBe('a value that cannot be printed');
  });

  it('survives an Error whose message getter throws', () => {
    const error = new Error('hidden');
    Object.defineProperty(error, 'message', {
      get() {
        throw new Error('no');
      },
    });
    expect(describeError(error)).toBe('[object Error]');
  });

  it('caps a huge message and says how much was left out', () => {
    const text = describeError(new Error('x'.repeat(10_000_000)));
    expect(text).toHaveLength(MAX_ERROR_TEXT);
    expect(text).toMatch(/^x+… \(10000000 characters in all\)$/);
  });
});

describe('errorDetail', () => {
  it("keeps an Error's stack, capped, and describes anything else safely", () => {
    const error = new Error('boom');
    expect(errorDetail(error)).toBe(error.stack);
    expect(errorDetail(Object.create(null))).toBe('[object Object]');
    expect(errorDetail(new Error('y'.repeat(5000)))).toHaveLength(MAX_ERROR_TEXT);
  });
});

describe('failureText', () => {
  it("keeps an error's name and message, its stack only when asked", () => {
    const error = new TypeError('bad input');
    expect(failureText(error, false)).toBe('TypeError: bad input');
    expect(failureText(error, true)).toBe(error.stack);
    expect(failureText('a string', true)).toBe('a string');
    expect(failureText(Object.create(null), false)).toBe('[object Object]');
    expect(failureText(new Error('y'.repeat(5000)), false)).toHaveLength(MAX_ERROR_TEXT);
  });
});
