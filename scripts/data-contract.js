#!/usr/bin/env node
// Usage: node scripts/data-contract.js [--update]   (run by `npm run api [-- --update]`, after its build)
// The data contract: what the scripts read and write in Redis, as the built package ships them (each
// script with its includes inlined): per script its Input/Output block (keys, arguments, reply) and a
// digest of its whole text, then the key kinds and storage layouts. Two checks:
// - the report committed in libs/queue/api/data-contract.md matches the build (--update rewrites it),
//   so a change shows in review as a change of the report;
// - every script that differs from the previous release's (its tarball in compat/releases) is named in
//   docs/upgrading.md's "Changes of the data contract", which says how the two versions coexist.
'use strict';

const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { unpackPrevious } = require('./releases');

const root = path.join(__dirname, '..');
const reportPath = path.join(root, 'libs', 'queue', 'api', 'data-contract.md');
const upgradingPath = path.join(root, 'docs', 'upgrading.md');

function luaFiles(dir, base = dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return luaFiles(file, base);
      return entry.name.endsWith('.lua') ? [path.relative(base, file).split(path.sep).join('/')] : [];
    })
    .sort();
}

/** The contract of a built library (`dist`): script name → { header, digest }, and the key kinds and layouts. */
function contractOf(dist) {
  const scripts = new Map();
  for (const file of luaFiles(dist)) {
    const text = fs.readFileSync(path.join(dist, file), 'utf8');
    const header = [];
    for (const line of text.split('\n')) {
      if (!line.startsWith('--')) break;
      header.push(line);
    }
    const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
    scripts.set(path.basename(file), { file, header: header.join('\n'), digest });
  }
  const meta = fs.readFileSync(path.join(dist, 'redis', 'queue-meta.js'), 'utf8');
  return {
    scripts,
    keyKinds: keyKinds(dist, 'SHARD', 'ShardKeyKind'),
    memberKinds: keyKinds(dist, 'MEMBER', 'MemberKeyKind'),
    layouts: meta.match(/const LAYOUTS = (\{[^}]*\})/)?.[1] ?? '?',
  };
}

function declarations(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return declarations(file);
    return entry.name.endsWith('.d.ts') ? [fs.readFileSync(file, 'utf8')] : [];
  });
}

/**
 * The key kinds of every queue kind, sorted: each kind names its own (`<KIND>_SHARD_KEY_KINDS` and
 * `<KIND>_MEMBER_KEY_KINDS` beside it); a build up to 0.2.0 listed them all as one type in redis/keys.
 */
function keyKinds(dist, what, formerType) {
  const former = fs.readFileSync(path.join(dist, 'redis', 'keys.d.ts'), 'utf8');
  const union = former.match(new RegExp(`type ${formerType} = ([^;]+);`))?.[1];
  const lists = union
    ? [union]
    : declarations(dist).flatMap((text) =>
        [...text.matchAll(new RegExp(`declare const \\w+_${what}_KEY_KINDS: readonly \\[([^\\]]*)\\]`, 'g'))].map(
          (match) => match[1],
        ),
      );
  const kinds = new Set(lists.flatMap((list) => [...list.matchAll(/["']([^"']+)["']/g)].map((match) => match[1])));
  return kinds.size
    ? [...kinds]
        .sort()
        .map((kind) => `'${kind}'`)
        .join(' | ')
    : '?';
}

function render(contract) {
  const lines = [
    '# Data contract of nestjs-redis-queues',
    '',
    'Written by `npm run api` (scripts/data-contract.js) from the built package: what its scripts read and write',
    'in Redis. A change here is a change that processes of the previous release meet during a rolling deploy;',
    'docs/upgrading.md must say how the two coexist.',
    '',
    `- shard key kinds: ${contract.keyKinds}`,
    `- member key kinds: ${contract.memberKinds}`,
    `- storage layouts: ${contract.layouts}`,
    '',
  ];
  for (const [name, { file, header, digest }] of contract.scripts) {
    lines.push(`## ${name}`, '', `\`${file}\`, text digest \`${digest}\``, '', '```lua', header, '```', '');
  }
  return lines.join('\n');
}

const current = contractOf(path.join(root, 'libs', 'queue', 'dist'));
const text = render(current);
let failed = false;
if (process.argv.includes('--update')) fs.writeFileSync(reportPath, text);
else if (!fs.existsSync(reportPath) || fs.readFileSync(reportPath, 'utf8') !== text) {
  failed = true;
  console.error(
    `${path.relative(root, reportPath)} does not match the built scripts: run \`npm run api -- --update\` and commit it`,
  );
}

const previous = unpackPrevious();
try {
  const before = contractOf(path.join(previous.package, 'dist'));
  const changed = [
    ...[...current.scripts].filter(([name, now]) => before.scripts.get(name)?.digest !== now.digest).map(([n]) => n),
    ...[...before.scripts.keys()].filter((name) => !current.scripts.has(name)),
  ];
  for (const [what, now, then] of [
    ['shard key kinds', current.keyKinds, before.keyKinds],
    ['member key kinds', current.memberKinds, before.memberKinds],
    ['storage layouts', current.layouts, before.layouts],
  ]) {
    if (now !== then) changed.push(what);
  }
  const upgrading = fs.readFileSync(upgradingPath, 'utf8');
  const section = upgrading.slice(upgrading.indexOf('## Changes of the data contract'));
  const unexplained = changed.filter((name) => !section.includes(`\`${name}\``));
  if (unexplained.length) {
    failed = true;
    console.error(
      `Changed since ${previous.version} and not explained in docs/upgrading.md ("Changes of the data contract", ` +
        `each named in backquotes with how ${previous.version} and this version coexist): ${unexplained.join(', ')}`,
    );
  }
} finally {
  previous.remove();
}
process.exit(failed ? 1 : 0);
