// What the documentation checks and the package's README share: the markdown pages of the repository,
// their code blocks, headings, anchors and links. Plain markdown as GitHub renders it; no dependency.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');

/** README.md and every page of docs/, as paths relative to the repository. */
function pages() {
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => `docs/${file}`);
  return ['README.md', ...docs];
}

const read = (page) => fs.readFileSync(path.join(root, page), 'utf8');

/**
 * The fenced code blocks of `markdown`: `lang`, the attributes written after it (```ts file=src/app.module.ts
 * only=cjs → { file, only }), the code and the line of the opening fence (1-based).
 */
function codeBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const attributes = Object.fromEntries([...open[2].matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1], match[2]]));
    const start = i;
    const code = [];
    for (i++; i < lines.length && !lines[i].startsWith('```'); i++) code.push(lines[i]);
    blocks.push({ lang: open[1], attributes, code: `${code.join('\n')}\n`, line: start + 1 });
  }
  return blocks;
}

/** `markdown` with its code (fenced and inline) blanked out, line breaks kept. */
function withoutCode(markdown) {
  return markdown.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ' ')).replace(/`[^`\n]*`/g, '``');
}

/** The anchor GitHub gives a heading's text: lower case, punctuation dropped, spaces to hyphens. */
function slug(text) {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor of `markdown`'s headings, numbered as GitHub numbers repeated ones (`x`, `x-1`, ...). */
function anchors(markdown) {
  const seen = new Map();
  const result = new Set();
  const headings = markdown
    .replace(/^```[\s\S]*?^```/gm, '')
    .split('\n')
    .filter((line) => /^#{1,6} /.test(line));
  for (const line of headings) {
    const base = slug(line.replace(/^#+ /, '').replace(/`/g, ''));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Link and image targets outside code: `[text](target)`, `[ref]: target`, `<a href>` / `<img src>`. */
function links(markdown) {
  const text = withoutCode(markdown);
  return [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)/g)].map((match) => match[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$/gm)].map((match) => match[1]),
    ...[...text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)=["']([^"']+)/gi)].map((match) => match[1]),
  ];
}

/** Targets that are neither absolute URLs nor anchors in the page itself. */
function relativeLinks(markdown) {
  return links(markdown).filter((target) => !/^(https?:|mailto:|#)/i.test(target));
}

/**
 * What is wrong with the links of `page` (a path relative to the repository): relative targets that do
 * not exist, and #anchors that no heading of the target page has.
 */
function brokenLinks(page, markdown = read(page)) {
  const problems = [];
  for (const target of links(markdown)) {
    if (/^(https?:|mailto:)/i.test(target)) continue;
    const [file, anchor] = target.split('#');
    if (!file) {
      if (!anchors(markdown).has(decodeURIComponent(anchor)))
        problems.push(`${page}: ${target} (no heading of the page has this anchor)`);
      continue;
    }
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
    const absolute = path.join(root, resolved);
    if (!fs.existsSync(absolute)) {
      problems.push(`${page}: ${target} (${resolved} does not exist)`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith('.md')) {
      problems.push(`${page}: ${target} (an anchor into a file that is not markdown)`);
      continue;
    }
    if (!anchors(resolved === page ? markdown : read(resolved)).has(decodeURIComponent(anchor)))
      problems.push(`${page}: ${target} (${resolved} has no heading with the anchor #${anchor})`);
  }
  return problems;
}

/** The section of `markdown` under the heading starting with `heading`, up to the next one as high or higher. */
function section(markdown, heading, where = 'the page') {
  const lines = markdown.split('\n');
  const level = heading.indexOf(' ');
  let fenced = false;
  const start = lines.findIndex((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && line.startsWith(heading);
  });
  if (start < 0) throw new Error(`${where} has no section "${heading}"`);
  let end = start + 1;
  fenced = false;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    const marks = /^(#+) /.exec(lines[end]);
    if (!fenced && marks && marks[1].length <= level) break;
  }
  return lines.slice(start, end).join('\n').trimEnd();
}

module.exports = { root, pages, read, codeBlocks, slug, anchors, links, relativeLinks, brokenLinks, section };

/**
 * The list docs/README.md opens with: each page of `order` (names in docs/) and its headings, as links.
 * `node scripts/docs.js contents` prints it after a page gained or lost a section.
 */
function contents(order) {
  const lines = [];
  for (const name of order) {
    const headings = read(`docs/${name}`)
      .replace(/^```[\s\S]*?^```/gm, '')
      .split('\n')
      .filter((line) => /^#{1,6} /.test(line));
    const seen = new Map();
    for (const heading of headings) {
      const level = heading.indexOf(' ');
      const text = heading.slice(level + 1);
      const base = slug(text.replace(/`/g, ''));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      const anchor = level === 1 ? '' : `#${count === 0 ? base : `${base}-${count}`}`;
      lines.push(`${'  '.repeat(level - 1)}- [${text}](${name}${anchor})`);
    }
  }
  return lines.join('\n');
}

module.exports.contents = contents;

if (require.main === module && process.argv[2] === 'contents') {
  const order = [
    'configuration.md',
    'fixed-queue.md',
    'delay-queue.md',
    'operations.md',
    'monitoring.md',
    'tracing.md',
    'errors.md',
    'testing.md',
    'guarantees.md',
    'redis-layout.md',
    'upgrading.md',
    'development.md',
  ];
  console.log(contents(order));
}
