#!/usr/bin/env node
// Usage: node scripts/pack-docs.js add|remove
// The package ships its own README, LICENSE and CHANGELOG: `add` (prepack) writes them into libs/queue,
// `remove` (postpack) takes them away again, so the repository keeps one copy of each. The package's
// README is docs/package-readme.md with the sections of the repository's README.md it names filled
// in: a reader who ran `npm install` has none of the repository's files, so a relative link in it
// fails the pack.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const lib = path.join(root, 'libs', 'queue');
const COPIED = ['LICENSE', 'CHANGELOG.md'];
const INCLUDE = /^<!-- README\.md: (#+ .+?) -->$/;

/** The section of `markdown` under the heading starting with `heading`, up to the next one as high or higher. */
function section(markdown, heading) {
  const lines = markdown.split('\n');
  const level = heading.indexOf(' ');
  const start = lines.findIndex((line) => line.startsWith(heading));
  if (start < 0) throw new Error(`README.md has no section "${heading}" (docs/package-readme.md asks for it)`);
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    const marks = /^(#+) /.exec(lines[end]);
    if (!fenced && marks && marks[1].length <= level) break;
  }
  return lines.slice(start, end).join('\n').trimEnd();
}

/** The package's README, from its template and the repository's README. */
function packageReadme() {
  const template = fs.readFileSync(path.join(root, 'docs', 'package-readme.md'), 'utf8');
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  return template
    .split('\n')
    .map((line) => {
      const include = INCLUDE.exec(line);
      return include ? section(readme, include[1]) : line;
    })
    .join('\n');
}

/** Link and image targets that are neither absolute URLs nor anchors in the page itself. */
function relativeLinks(markdown) {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const targets = [
    ...[...withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)/g)].map((match) => match[1]),
    ...[...withoutCode.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$/gm)].map((match) => match[1]),
    ...[...withoutCode.matchAll(/<(?:a|img)\s[^>]*(?:href|src)=["']([^"']+)/gi)].map((match) => match[1]),
  ];
  return targets.filter((target) => !/^(https?:|mailto:|#)/i.test(target));
}

function add() {
  for (const doc of COPIED) fs.copyFileSync(path.join(root, doc), path.join(lib, doc));
  const readme = packageReadme();
  const relative = relativeLinks(readme);
  if (relative.length > 0)
    throw new Error(
      `the package's README links to files it does not ship: ${relative.join(', ')}; use absolute URLs or leave them out`,
    );
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
