import { entryCarriers, entryJson, entryMessage, entryMessages, entryTime } from './fixed-entry';
import { withCarrier } from '../redis/traced-json';

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

  it('reads traced entries as the same messages, and their carriers each once', () => {
    const one = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const two = '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-00';
    const entries = [
      '[1,0]',
      `[2,${withCarrier(one, '0')}]`,
      `[3,${withCarrier(one, '"x"')}]`,
      `[4,${withCarrier(two, '{}')}]`,
    ];
    expect(entryMessages(entries, 0, 4, false)).toEqual([0, 0, 'x', {}]);
    expect(entryMessages(entries, 1, 2, true)).toEqual(['0']);
    expect(entryTime(entries[3])).toBe(4);
    expect(entryCarriers(entries, 0, 4)).toEqual([one, two]);
    expect(entryCarriers(entries, 0, 1)).toBeUndefined();
  });
});
