import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INCLUDES_DIR, inline } from './lua-loader';
import { SCRIPT_NAMES, scriptText } from './scripts';

const library = (files: Record<string, string>) => (name: string) => {
  if (!(name in files)) throw new Error(`ENOENT: ${name}`);
  return files[name];
};

describe('inline (the Lua include step)', () => {
  it('replaces an include line by the text of the include, keeping the lines around it', () => {
    const read = library({ now: 'local now = 1\n' });
    expect(inline('-- head\n--- @include "now"\nreturn now\n', 'script', read)).toBe(
      '-- head\nlocal now = 1\nreturn now\n',
    );
  });

  it('inlines includes of includes, each once, where it first appears', () => {
    const read = library({
      sliced: 'local function sliced() end\n',
      trim: '--- @include "sliced"\nlocal function trim() sliced() end\n',
    });
    const out = inline('--- @include "trim"\n--- @include "sliced"\nreturn 1\n', 'script', read);
    expect(out).toBe('local function sliced() end\nlocal function trim() sliced() end\n\nreturn 1\n');
    expect(out.match(/function sliced/g)).toHaveLength(1);
  });

  it('ends a cycle of includes instead of recursing forever', () => {
    const read = library({ a: '--- @include "b"\nA\n', b: '--- @include "a"\nB\n' });
    expect(inline('--- @include "a"\n', 'script', read)).toBe('\nB\nA\n');
  });

  it('leaves lines that only look like includes alone', () => {
    const text = '-- @include "now"\nlocal s = \'--- @include "now"\'\n  --- @include "now"\n';
    expect(inline(text, 'script', library({}))).toBe(text);
  });

  it('names the script and the include that cannot be read', () => {
    const read = library({ trim: '--- @include "slicd"\n' });
    expect(() => inline('--- @include "trim"\n', 'delay-fail', read)).toThrow(
      'Lua script "delay-fail" includes "slicd" (from "trim"), which cannot be read',
    );
  });
});

describe('loadScript', () => {
  const scripts = SCRIPT_NAMES.map(scriptText);

  it('leaves no include line in any script', () => {
    for (const lua of scripts) expect(lua).not.toMatch(/^--- @include/m);
  });

  it('uses every include (no dead helper ships)', () => {
    for (const file of readdirSync(INCLUDES_DIR)) {
      const body = readFileSync(join(INCLUDES_DIR, file), 'utf8').replace(/^--- @include .*\n/gm, '');
      expect(scripts.some((lua) => lua.includes(body.trimEnd()))).toBe(true);
    }
  });
});
