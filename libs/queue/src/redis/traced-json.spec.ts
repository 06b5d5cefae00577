import { carrierAt, jsonFrom, storedJson, withCarrier } from './traced-json';

describe('payloads stored with a trace context', () => {
  const carrier = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' + 'congo=t61rcWkgMzE';

  it('a plain payload is its JSON, whatever JSON it is, zero included', () => {
    for (const json of ['0', '0.5', '1', '12', '{"a":1}', '"0,\\"x\\""', '[0,"a"]', '[1,2]', 'null']) {
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

  it("a debounced task's payload, traced or not, gives back its JSON without its window", () => {
    for (const json of ['1', '{"a":1}', '"1,2"']) {
      expect(storedJson(`1,1764000000000,${json}`)).toBe(json);
      expect(storedJson(`1,1764000000000,${withCarrier(carrier, json)}`)).toBe(json);
    }
  });
});
