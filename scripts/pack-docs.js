#!/usr/bin/env node
// Usage: node scripts/pack-docs.js add|remove
// The package ships its own README, LICENSE and CHANGELOG: `add` (prepack) writes them into libs/queue,
// `remove` (postpack) takes them away again, so the repository keeps one copy of each. The package's
// README is docs/package-readme.md with what it includes filled in: a line
// `<!-- include README.md: ## Install -->` is that section of the page, `<!-- include docs/x.md -->`
// the whole page, its headings one level down. A reader who ran `npm install` has none of the
// repository's files, so links between the included pages become links to their anchors in the package
// README, a link to anything else becomes its text, and a link that still points nowhere fails the pack.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { root, read, section, slug, relativeLinks, brokenLinks } = require('./docs');

const lib = path.join(root, 'libs', 'queue');
const COPIED = ['LICENSE', 'CHANGELOG.md'];
const TEMPLATE = 'docs/package-readme.md';
const INCLUDE = /^<!-- include (\S+?)(?:: (#+ .+?))? -->$/;

/** `markdown` with each heading one level lower (`#` → `##`), code blocks untouched. */
function demote(markdown) {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced && /^#{1,5} /.test(line) ? `#${line}` : line;
    })
    .join('\n')
    .trimEnd();
}

/** Heading texts of `markdown` outside code blocks. */
function headings(markdown) {
  let fenced = false;
  const result = [];
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && /^#{1,6} /.test(line)) result.push(slug(line.replace(/^#+ /, '').replace(/`/g, '')));
  }
  return result;
}

/** The package's README, from its template and the pages it includes. */
function packageReadme() {
  const parts = read(TEMPLATE)
    .split('\n')
    .map((line) => {
      const include = INCLUDE.exec(line);
      if (!include) return { page: TEMPLATE, text: line, whole: false };
      const [, page, heading] = include;
      const markdown = read(page);
      return heading
        ? { page, text: section(markdown, heading, page), whole: false }
        : { page, text: demote(markdown), whole: true };
    });

  // Where each page's anchors land: GitHub numbers a repeated heading (x, x-1, ...) across the whole
  // package README, and within each page on its own.
  const global = new Map();
  const landing = new Map();
  const titles = new Map();
  const included = new Set();
  for (const part of parts) {
    if (part.page === TEMPLATE) continue;
    included.add(part.page);
    const local = new Map();
    for (const base of headings(part.text)) {
      const inPage = local.get(base) ?? 0;
      local.set(base, inPage + 1);
      const inReadme = global.get(base) ?? 0;
      global.set(base, inReadme + 1);
      const anchor = inReadme === 0 ? base : `${base}-${inReadme}`;
      landing.set(`${part.page}#${inPage === 0 ? base : `${base}-${inPage}`}`, anchor);
      if (part.whole && !titles.has(part.page)) titles.set(part.page, anchor);
    }
  }

  const rewrite = (part) =>
    part.text.replace(/(!?)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?\s*\)/g, (link, image, text, target) => {
      if (/^(https?:|mailto:)/i.test(target)) return link;
      const [file, anchor] = target.split('#');
      const page = file ? path.posix.normalize(path.posix.join(path.posix.dirname(part.page), file)) : part.page;
      if (anchor !== undefined && landing.has(`${page}#${anchor}`))
        return `${image}[${text}](#${landing.get(`${page}#${anchor}`)})`;
      if (anchor === undefined && titles.has(page)) return `${image}[${text}](#${titles.get(page)})`;
      if (included.has(page) && (anchor !== undefined || part.page === page))
        throw new Error(`${part.page}: ${target} points to no heading of ${page}`);
      return image ? '' : text;
    });

  return parts.map((part) => (part.page === TEMPLATE ? part.text : rewrite(part))).join('\n');
}

function add() {
  for (const doc of COPIED) fs.copyFileSync(path.join(root, doc), path.join(lib, doc));
  const readme = packageReadme();
  const problems = [
    ...relativeLinks(readme).map((target) => `a link to ${target}, which the package does not ship`),
    ...brokenLinks('libs/queue/README.md', readme),
  ];
  if (problems.length > 0) throw new Error(`the package's README is not self-contained:\n${problems.join('\n')}`);
  fs.writeFileSync(path.join(lib, 'README.md'), readme);
}

function remove() {
  for (const doc of [...COPIED, 'README.md']) fs.rmSync(path.join(lib, doc), { force: true });
}

module.exports = { packageReadme, relativeLinks };

if (require.main === module) {
  const action = process.argv[2];
  if (action === 'add') add();
  else if (action === 'remove') remove();
  else {
    console.error('usage: node scripts/pack-docs.js add|remove');
    process.exit(2);
  }
}
