import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { QueueError } from '../errors';
import { scriptNames, scriptSets, SHARED_INCLUDES } from './script-registry';
import { scriptSet } from './script-set';
import { scriptText } from './scripts';

/** Every protocol file of the library (`<folder>/lua/*.ts`), read as the library's imports would read them. */
function defineEveryScript(): void {
  const src = join(__dirname, '..');
  for (const folder of readdirSync(src, { withFileTypes: true })) {
    const lua = join(src, folder.name, 'lua');
    if (!folder.isDirectory() || !readdirSync(join(src, folder.name)).includes('lua')) continue;
    for (const file of readdirSync(lua).filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts')))
      require(join(lua, file)); // eslint-disable-line @typescript-eslint/no-require-imports
  }
}

const luaFiles = (dir: string) => readdirSync(dir).filter((file) => file.endsWith('.lua'));

describe('the script registry', () => {
  beforeAll(defineEveryScript);

  it('defines every .lua of each set directory, by the protocol of that name, and nothing else', () => {
    expect(scriptSets().length).toBeGreaterThanOrEqual(4);
    for (const { dir, scripts } of scriptSets())
      expect(scripts.map((script) => `${script}.lua`).sort()).toEqual(luaFiles(dir).sort());
  });

  it('refuses a second script of the same name, naming both places', () => {
    const [name] = scriptNames();
    const again = scriptSet('/elsewhere');
    const define = () => again.define({ script: name, keys: () => [], args: () => [], decode: () => null });
    expect(define).toThrow(QueueError);
    expect(define).toThrow(`Lua script "${name}" is defined twice`);
    expect(again.scripts).toEqual([]);
  });

  it('refuses to run a script that no protocol defined', () => {
    expect(() => scriptText('no-such-script')).toThrow('No Lua script "no-such-script" is defined');
  });
});

describe('the scripts as Redis runs them', () => {
  beforeAll(defineEveryScript);
  const scripts = () => scriptNames().map(scriptText);

  it('leaves no include line in any script', () => {
    for (const lua of scripts()) expect(lua).not.toMatch(/^--- @include/m);
  });

  it('uses every include of every includes directory (no dead helper ships)', () => {
    const dirs = new Set([SHARED_INCLUDES, ...scriptSets().flatMap(({ includes }) => includes)]);
    const texts = scripts();
    for (const dir of dirs)
      for (const file of luaFiles(dir)) {
        const body = readFileSync(join(dir, file), 'utf8').replace(/^--- @include .*\n/gm, '');
        expect([file, texts.some((lua) => lua.includes(body.trimEnd()))]).toEqual([file, true]);
      }
  });

  it('keeps in the shared includes only what scripts of several sets use', () => {
    for (const file of luaFiles(SHARED_INCLUDES)) {
      const body = readFileSync(join(SHARED_INCLUDES, file), 'utf8').replace(/^--- @include .*\n/gm, '');
      const users = scriptSets().filter(({ scripts }) =>
        scripts.some((script) => scriptText(script).includes(body.trimEnd())),
      );
      expect([file, users.length > 1]).toEqual([file, true]);
    }
  });
});
