import { withCarrier } from '../redis/traced-json';
import { CreationContexts, MAX_LINKS } from './creation-contexts';

const carrier = (n: number) => `00-0af7651916cd43dd8448eb211c80319c-${n.toString(16).padStart(16, '0')}-01`;

describe('CreationContexts', () => {
  it('counts the messages, lists each carrier once in first-seen order, and counts those that carry none', () => {
    const origins = new CreationContexts();
    for (const text of [
      withCarrier(carrier(1), '{"a":1}'),
      withCarrier(carrier(1), '0'),
      '0',
      withCarrier(carrier(2) + 'k=v', '[]'),
      withCarrier(carrier(1), '"x"'),
      '{"b":2}',
    ])
      origins.add(text);
    expect(origins.carriers).toEqual([carrier(1), carrier(2) + 'k=v']);
    expect(origins).toMatchObject({ count: 6, bare: 2, overflow: false, sole: undefined });
  });

  it('tells a carrier from a longer one that starts with it (a trace state)', () => {
    const origins = new CreationContexts();
    origins.add(withCarrier(carrier(1), '1'));
    origins.add(withCarrier(carrier(1) + 'k=v', '2'));
    expect(origins.carriers).toEqual([carrier(1), carrier(1) + 'k=v']);
  });

  it('has a sole context only when every message carries the same one', () => {
    const same = new CreationContexts();
    same.add(withCarrier(carrier(1), '1'));
    same.addCarrier(carrier(1));
    expect(same.sole).toBe(carrier(1));
    same.addCarrier(undefined);
    expect(same.sole).toBeUndefined();
  });

  it('keeps the first MAX_LINKS contexts and says there were more', () => {
    const origins = new CreationContexts();
    for (let n = 0; n <= MAX_LINKS; n++) origins.addCarrier(carrier(n));
    expect(origins.carriers).toHaveLength(MAX_LINKS);
    expect(origins.carriers[0]).toBe(carrier(0));
    expect(origins).toMatchObject({ count: MAX_LINKS + 1, overflow: true });
  });
});
