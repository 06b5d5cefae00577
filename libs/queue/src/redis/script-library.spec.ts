import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { QueueError } from '../errors';
import { scriptLibrary } from '../queue-scripts';
import { ScriptLibrary, SHARED_INCLUDES } from './script-library';
import { scriptSet } from './script-set';
import { QUEUE_SCRIPTS } from './lua/queue.scripts';

const luaFiles = (dir: string) => readdirSync(dir).filter((file) => file.endsWith('.lua'));

/** Every `<folder>/lua` directory of the library that holds scripts. */
function scriptDirs(): string[] {
  const src = join(__dirname, '..');
  return readdirSync(src, { withFileTypes: true })
    .map((folder) => join(src, folder.name, 'lua'))
    .filter((lua) => {
      try {
        return luaFiles(lua).length > 0;
      } catch {
        return false;
      }
    });
}

describe('the script library', () => {
  const library = scriptLibrary();

  it('holds every set of scripts, each defining every .lua of its directory by the protocol of that name', () => {
    expect(library.sets.map(({ dir }) => dir).sort()).toEqual(scriptDirs().sort());
    for (const { dir, scripts } of library.sets)
      expect(scripts.map((script) => `${script}.lua`).sort()).toEqual(luaFiles(dir).sort());
  });

  it('refuses a second script of the same name, naming both places', () => {
    const [name] = QUEUE_SCRIPTS.scripts;
    const again = scriptSet('/elsewhere', [], [{ script: name }]);
    const add = () => library.add(again);
    expect(add).toThrow(QueueError);
    expect(add).toThrow(`Lua script "${name}" is defined twice`);
    expect(library.sets).not.toContain(again);
    expect(() => scriptSet('/elsewhere', [], [{ script: 'a' }, { script: 'a' }])).toThrow(
      'Lua script "a" is defined twice',
    );
  });

  it('runs only the scripts of the sets added to it: importing a protocol registers nothing', () => {
    const connection = new ScriptLibrary();
    connection.add(QUEUE_SCRIPTS);
    expect(connection.names().sort()).toEqual([...QUEUE_SCRIPTS.scripts].sort());
    expect(() => connection.text('fixed-push')).toThrow('No Lua script "fixed-push" is defined on this connection');
  });
});

describe('the scripts as Redis runs them', () => {
  const library = scriptLibrary();
  const scripts = () => library.names().map((name) => library.text(name));

  it('leaves no include line in any script', () => {
    for (const lua of scripts()) expect(lua).not.toMatch(/^--- @include/m);
  });

  it('uses every include of every includes directory (no dead helper ships)', () => {
    const dirs = new Set([SHARED_INCLUDES, ...library.sets.flatMap(({ includes }) => includes)]);
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
      const users = library.sets.filter(({ scripts }) =>
        scripts.some((script) => library.text(script).includes(body.trimEnd())),
      );
      expect([file, users.length > 1]).toEqual([file, true]);
    }
  });
});
