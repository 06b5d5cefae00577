import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The README a user gets from `npm install` (scripts/pack-docs.js writes it at `npm pack`).
const { packageReadme, relativeLinks } = require('../../scripts/pack-docs') as {
  packageReadme(): string;
  relativeLinks(markdown: string): string[];
};
const { brokenLinks, codeBlocks } = require('../../scripts/docs') as {
  brokenLinks(page: string, markdown?: string): string[];
  codeBlocks(markdown: string): { lang: string; code: string }[];
};
const { FLAVORS, snippets } = require('../../scripts/snippets') as {
  FLAVORS: string[];
  snippets(flavor: string): { code: string }[];
};

describe("the package's README", () => {
  const readme = packageReadme();
  const headings = readme.split('\n').filter((line) => /^##? /.test(line));

  it('links to nothing the package does not ship, and every #anchor it links to is one of its headings', () => {
    expect(relativeLinks(readme)).toEqual([]);
    expect(brokenLinks('libs/queue/README.md', readme)).toEqual([]);
  });

  it('has only TypeScript that the documentation checks compile (test/package/docs.e2e-spec.ts)', () => {
    const compiled = new Set(FLAVORS.flatMap((flavor) => snippets(flavor).map((snippet) => snippet.code)));
    const blocks = codeBlocks(readme).filter((block) => block.lang === 'ts');
    expect(blocks.length).toBeGreaterThan(10);
    expect(blocks.filter((block) => !compiled.has(block.code)).map((block) => block.code)).toEqual([]);
  });

  it("holds the whole reference: every page of docs/ but the repository's own", () => {
    for (const heading of ['## Operations', '## Monitoring', '## Errors over HTTP', '## Testing', '## Redis layout'])
      expect(headings).toContain(heading);
    expect(readme).toContain('### Your first test');
    expect(readme).not.toContain('## Development');
  });

  it('finds relative links where there are some (the repository README has them)', () => {
    const repository = readFileSync(join(__dirname, '../..', 'README.md'), 'utf8');
    expect(relativeLinks(repository)).toEqual(expect.arrayContaining(['apps/demo/README.md', 'docs/dashboard.png']));
    expect(
      relativeLinks('[a](./x.md) ![b](img.png) [c](#anchor) [d](https://example.com) `[e](f)`\n[g]: ../y'),
    ).toEqual(['./x.md', 'img.png', '../y']);
  });

  it("reads install, example, API, guarantees, and none of the repository's commands", () => {
    const order = ['## Install', '## Example', '## Configuration', '## FixedQueue', '## DelayQueue', '## Guarantees'];
    const at = order.map((heading) => headings.findIndex((line) => line.startsWith(heading)));
    expect(at.every((index) => index >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(headings).toEqual(expect.arrayContaining(['## Testing', '## Errors over HTTP']));
    expect(headings).not.toEqual(expect.arrayContaining(['## Quick start', '## The demo', '## Development']));
    expect(readme).not.toMatch(/npm run (demo|compat|bench)|npm test\b|<!-- include /);
  });
});
