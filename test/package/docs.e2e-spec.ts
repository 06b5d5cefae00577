// The documentation a newcomer follows: its links lead somewhere, and its TypeScript compiles in the
// application `nest new` makes (`isolatedModules` and `emitDecoratorMetadata` refuse what a laxer
// tsconfig accepts). `npm run compat` compiles the same blocks again against the packed library and
// the real packages, and runs the first test.
const docs = require('../../scripts/docs') as {
  pages(): string[];
  read(page: string): string;
  brokenLinks(page: string, markdown?: string): string[];
  codeBlocks(markdown: string): { lang: string; attributes: Record<string, string>; code: string; line: number }[];
  slug(text: string): string;
  anchors(markdown: string): Set<string>;
};
const { FLAVORS, compileSnippets, snippets } = require('../../scripts/snippets') as {
  FLAVORS: string[];
  compileSnippets(flavor: string, from?: string[]): string[];
  snippets(flavor: string, from?: string[]): { file: string; page: string; line: number; code: string }[];
};

describe('the documentation', () => {
  const pages = docs.pages();

  it('is README.md and the pages of docs/, the package README template among them', () => {
    expect(pages).toEqual(
      expect.arrayContaining(['README.md', 'docs/README.md', 'docs/package-readme.md', 'docs/guarantees.md']),
    );
  });

  it('has no relative link or #anchor that leads nowhere', () => {
    expect(pages.flatMap((page) => docs.brokenLinks(page))).toEqual([]);
  });

  it('finds broken links and anchors where there are some', () => {
    expect(
      docs.brokenLinks('README.md', '[a](docs/none.md) [b](#nowhere) [c](docs/guarantees.md#acl) `[d](e)`'),
    ).toEqual([
      'README.md: docs/none.md (docs/none.md does not exist)',
      'README.md: #nowhere (no heading of the page has this anchor)',
    ]);
    expect(docs.brokenLinks('docs/x.md', '[a](guarantees.md#no-such-heading)')).toEqual([
      'docs/x.md: guarantees.md#no-such-heading (docs/guarantees.md has no heading with the anchor #no-such-heading)',
    ]);
  });

  it('anchors headings as GitHub does', () => {
    expect(docs.slug('Module options — QueueModule.forRoot(options)')).toBe(
      'module-options--queuemoduleforrootoptions',
    );
    expect(docs.slug('Memory: noeviction is required')).toBe('memory-noeviction-is-required');
    expect([...docs.anchors('# A\n## B\n```\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
  });

  it('has a table of contents linking every page of docs/ and each of its sections', () => {
    const contents = docs.read('docs/README.md');
    const reference = pages.filter((page) => page.startsWith('docs/') && !/\/(README|package-readme)\.md$/.test(page));
    expect(reference.length).toBeGreaterThan(5);
    for (const page of reference) {
      const name = page.slice('docs/'.length);
      const [title, ...sections] = docs.anchors(docs.read(page));
      const missing = [`](${name})`, ...sections.map((anchor) => `](${name}#${anchor})`)].filter(
        (link) => !contents.includes(link),
      );
      expect({ page, title, missing }).toEqual({ page, title, missing: [] });
    }
  });

  it("keeps the README to a newcomer's first hour, and the reference in docs/", () => {
    const readme = docs.read('README.md');
    const sections = readme.split('\n').filter((line) => line.startsWith('## '));
    expect(sections).toEqual([
      '## When to use it',
      '## Quick start',
      '## The demo',
      '## Install',
      '## Example',
      '## Guarantees',
      '## Versioning',
      '## Documentation',
    ]);
    expect(readme.split('\n').length).toBeLessThan(350);
    expect(readme).toContain('npm run demo');
    expect(readme).toContain('npm test');
  });

  it('tells which optional packages go with each Nest major', () => {
    const install = docs
      .codeBlocks(docs.read('README.md'))
      .filter((block) => block.lang === 'bash' && block.attributes.only);
    expect(install.map((block) => block.attributes.only)).toEqual(['nest11', 'nest12']);
    expect(install[0].code).toMatch(/@nestjs\/schedule@\^6\b/);
    expect(install[0].code).toMatch(/@nestjs\/terminus@\^11\b/);
    expect(install[1].code).toMatch(/@nestjs\/schedule@\^12\b/);
    expect(install[1].code).toMatch(/@nestjs\/terminus@\^12\b/);
  });

  it('shows the first test with jest for Nest 11 and vitest for Nest 12', () => {
    const test = (flavor: string) => snippets(flavor).find((snippet) => snippet.file === 'src/app.spec.ts');
    expect(test('nest11')?.code).toMatch(/jest\.fn\(\)/);
    expect(test('nest12')?.code).toMatch(/from 'vitest'/);
    for (const flavor of FLAVORS)
      expect(test(flavor)?.code).toMatch(/createBatchContext\(.*\n[\s\S]*createDelayContext\(/);
  });

  it.each(FLAVORS)('has TypeScript that compiles in a `nest new` %s application', (flavor) => {
    expect(snippets(flavor).length).toBeGreaterThan(10);
    expect(compileSnippets(flavor)).toEqual([]);
  });

  it('reports what does not compile, where it is written', () => {
    const errors = compileSnippets('nest11', ['test/fixtures/docs-broken.md']);
    expect(errors).toEqual([
      expect.stringMatching(/^test\/fixtures\/docs-broken\.md:10 \(src\/test-fixtures-docs-broken-3\.ts\): TS1272: /),
      expect.stringMatching(
        /^test\/fixtures\/docs-broken\.md:13 \(src\/test-fixtures-docs-broken-3\.ts\): TS2741: .*'signal'/,
      ),
    ]);
  });
});
