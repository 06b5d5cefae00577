import { carrierAt, jsonFrom, storedJson, withCarrier } from './traced-json';

describe('payloads stored with a trace context', () => {
  const carrier = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' + 'congo=t61rcWkgMzE';

  it('a plain payload is its JSON, whatever JSON it is, zero included', () => {
    for (const json of ['0', '0.5', '{"a":1}', '"0,\\"x\\""', '[0,"a"]', 'null']) {
      expect(jsonFrom(json, 0)).toBe(0);
      expect(carrierAt(json, 0)).toBeUndefined();
      expect(storedJson(json)).toBe(json);
    }
  });

  it('a traced payload gives back its carrier and its JSON', () => {
    for (const json of ['0', '{"t":"a\\",b"}', '"x"']) {
      const stored = withCarrier(carrier, json);
      expect(carrierAt(stored, 0)).toBe(carrier);
      expect(storedJson(stored)).toBe(json);
    }
  });
});
