import { entryJson, entryMessage, entryMessages, entryTime } from './fixed-entry';

describe('FixedQueue list entries', () => {
  const entry = '[1700000000123,{"text":"a,b]","n":[1,2]}]';

  it('reads the push time and the message, commas and brackets inside the message included', () => {
    expect(entryTime(entry)).toBe(1_700_000_000_123);
    expect(entryJson(entry)).toBe('{"text":"a,b]","n":[1,2]}');
    expect(entryMessage(entry)).toEqual({ text: 'a,b]', n: [1, 2] });
  });

  it('reads a slice of entries, parsed or as JSON text', () => {
    const entries = ['[1,1]', '[2,"two"]', '[3,null]', '[4,{}]'];
    expect(entryMessages(entries, 1, 3, false)).toEqual(['two', null]);
    expect(entryMessages(entries, 1, 3, true)).toEqual(['"two"', 'null']);
  });
});
