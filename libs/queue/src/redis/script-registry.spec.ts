import { readdirSync } from 'node:fs';
import { SCRIPT_SETS } from './script-registry';

describe('the script registry', () => {
  it('lists every .lua of its directories, by the protocol of that name, and nothing else', () => {
    const listed = new Map<string, string[]>();
    for (const { dir, protocols } of SCRIPT_SETS)
      listed.set(dir, [...(listed.get(dir) ?? []), ...protocols.map(({ script }) => `${script}.lua`)]);
    for (const [dir, files] of listed)
      expect(files.sort()).toEqual(
        readdirSync(dir)
          .filter((file) => file.endsWith('.lua'))
          .sort(),
      );
  });

  it('names each script once', () => {
    const names = SCRIPT_SETS.flatMap(({ protocols }) => protocols.map(({ script }) => script));
    expect(new Set(names).size).toBe(names.length);
  });
});
