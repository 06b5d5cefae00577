import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inline, loadScript } from './lua-loader';

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
  const root = mkdtempSync(join(tmpdir(), 'lua-'));
  const write = (dir: string, files: Record<string, string>) => {
    mkdirSync(join(root, dir), { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, dir, `${name}.lua`), text);
  };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("reads an include from the first directory that has it: the kind's own, then the shared one", () => {
    write('kind', { job: '--- @include "own"\n--- @include "both"\n' });
    write('kind/includes', { own: 'OWN\n', both: 'KIND\n' });
    write('shared', { both: 'SHARED\n', only: 'ONLY\n' });
    const includes = [join(root, 'kind/includes'), join(root, 'shared')];
    expect(loadScript(join(root, 'kind'), 'job', includes)).toBe('OWN\nKIND\n');
    write('kind', { other: '--- @include "only"\n' });
    expect(loadScript(join(root, 'kind'), 'other', includes)).toBe('ONLY\n');
    write('kind', { lost: '--- @include "nowhere"\n' });
    expect(() => loadScript(join(root, 'kind'), 'lost', includes)).toThrow(
      'Lua script "lost" includes "nowhere" (from "lost"), which cannot be read',
    );
  });
});
