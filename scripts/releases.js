// The packed releases kept in compat/releases, for the checks that run the previous release beside
// this tree (scripts/mixed.js) or compare with it (scripts/data-contract.js).
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const releases = path.join(root, 'compat', 'releases');
const current = require(path.join(root, 'libs', 'queue', 'package.json')).version;

const versionOf = (name) => name.match(/-(\d+\.\d+\.\d+)\.tgz$/)[1];
const compare = (a, b) => {
  const [x, y] = [a, b].map((version) => version.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};

/**
 * The newest release not above this tree's version: between releases, the one whose processes share
 * Redis with this tree's during a deploy; while a release is being cut (version raised, not yet
 * packed), the one before it.
 */
function previousRelease() {
  const candidates = fs
    .readdirSync(releases)
    .filter((name) => /^nestjs-redis-queues-\d+\.\d+\.\d+\.tgz$/.test(name))
    .filter((name) => compare(versionOf(name), current) <= 0)
    .sort((a, b) => compare(versionOf(a), versionOf(b)));
  if (!candidates.length) throw new Error(`no release tarball in ${path.relative(root, releases)}`);
  const tarball = candidates[candidates.length - 1];
  return { tarball, version: versionOf(tarball) };
}

/** Unpacks the previous release into a private directory: `package` is its root; `remove()` when done. */
function unpackPrevious() {
  const { tarball, version } = previousRelease();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nrq-previous-'));
  const untar = spawnSync('tar', ['-xzf', path.join(releases, tarball), '-C', dir], { stdio: 'inherit' });
  if (untar.status !== 0) throw new Error(`could not unpack ${tarball}`);
  return {
    tarball,
    version,
    package: path.join(dir, 'package'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

module.exports = { current, unpackPrevious };
