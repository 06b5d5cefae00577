#!/usr/bin/env node
// Usage: npm run compat
// Packs the library as it would be published and installs the tarball, with everything else from the
// registry, into fresh applications outside the repository: one per supported kind of Nest app and
// ioredis major (compat/<name>/ holds its package.json and tsconfig, compat/app/ the source they
// share). Each is compiled with tsc and run against a private redis-server, once per way of giving the
// connection (a URL, or a client of the application's own); a run exits 0 once its checks passed.
// The packed README is checked first: it must not link to files the package does not ship.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { relativeLinks } = require('./pack-docs');
const { startRedis } = require('./redis');

const root = path.join(__dirname, '..');
const APPS = [
  { name: 'nest11', kind: 'Nest 11, CommonJS', connections: ['url', 'client'] },
  { name: 'nest12', kind: 'Nest 12, ES module', connections: ['url'] },
  { name: 'ioredis6', kind: 'Nest 11, CommonJS, ioredis 6', connections: ['url', 'client'] },
];
const INSTALL_TIMEOUT_MS = 5 * 60_000;
const BUILD_TIMEOUT_MS = 2 * 60_000;
const RUN_TIMEOUT_MS = 60_000;

// The applications must see nothing of the monorepo: none of the variables by which the `npm run`
// that started us names the repository as the project, no module search path. The user's npm
// settings (registry, cache, proxy...) stay.
const PROJECT_VARIABLES =
  /^(npm_package_|npm_lifecycle_|npm_command$|npm_config_local_prefix$|npm_config_workspaces?$|INIT_CWD$|NODE_PATH$)/i;
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !PROJECT_VARIABLES.test(name)));

const children = new Set();
let work = null;
process.on('exit', () => {
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(128 + os.constants.signals[signal]));

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** Runs a command in its own process group; resolves with its combined output, rejects with it on failure. */
function run(command, args, { cwd, env = cleanEnv, timeoutMs }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    const line = [command, ...args].map((a) => path.basename(a)).join(' ');
    child.once('error', (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(Object.assign(new Error(`cannot run ${line}: ${error.message}`), { output }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) return resolve(output);
      const why = timedOut
        ? `timed out after ${seconds(timeoutMs)}`
        : signal
          ? `killed by ${signal}`
          : `exit code ${code}`;
      reject(Object.assign(new Error(`${line} failed (${why})`), { output }));
    });
  });
}

/** Packs libs/queue (its prepack script builds it) into `dir`; returns the tarball's path. */
async function pack(dir) {
  await run('npm', ['pack', '--pack-destination', dir, '--loglevel', 'warn'], {
    cwd: path.join(root, 'libs', 'queue'),
    env: process.env,
    timeoutMs: BUILD_TIMEOUT_MS,
  });
  const tarballs = fs.readdirSync(dir).filter((file) => file.endsWith('.tgz'));
  if (tarballs.length !== 1) throw new Error(`npm pack left ${tarballs.length} tarballs in ${dir}`);
  return path.join(dir, tarballs[0]);
}

/** The README inside the tarball is what the registry shows and `npm install` brings. */
function checkReadme(tarball) {
  const listed = spawnSync('tar', ['-xzOf', tarball, 'package/README.md'], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`the tarball has no README.md (${listed.stderr.trim()})`);
  const relative = relativeLinks(listed.stdout);
  if (relative.length > 0) throw new Error(`the packed README links to files it does not ship: ${relative.join(', ')}`);
}

function installedVersion(dir, pkg) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

/** Creates one application in `dir` from compat/<name>, installs, builds and runs it. */
async function checkApp({ name, kind, connections }, tarball, redisUrl) {
  const dir = path.join(work, name);
  const times = {};
  const step = async (label, fn) => {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      times[label] = Date.now() - started;
    }
  };
  try {
    fs.cpSync(path.join(root, 'compat', name), dir, { recursive: true });
    fs.cpSync(path.join(root, 'compat', 'app'), path.join(dir, 'src'), { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    manifest.dependencies['nestjs-redis-queues'] = `file:${tarball}`;
    fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

    await step('install', () =>
      run('npm', ['install', '--no-audit', '--no-fund', '--loglevel', 'warn'], {
        cwd: dir,
        timeoutMs: INSTALL_TIMEOUT_MS,
      }),
    );
    const library = path.join(dir, 'node_modules', 'nestjs-redis-queues');
    if (fs.lstatSync(library).isSymbolicLink())
      throw new Error('nestjs-redis-queues was linked, not installed from the tarball');
    await step('build', () =>
      run(process.execPath, [path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
        cwd: dir,
        timeoutMs: BUILD_TIMEOUT_MS,
      }),
    );
    for (const connection of connections) {
      await step(`run (${connection})`, () =>
        run(process.execPath, [path.join(dir, 'dist', 'main.js')], {
          cwd: dir,
          env: {
            ...cleanEnv,
            REDIS_URL: redisUrl,
            COMPAT_PREFIX: `compat-${name}-${connection}`,
            COMPAT_CONNECTION: connection,
          },
          timeoutMs: RUN_TIMEOUT_MS,
        }),
      );
    }
    const versions = ['@nestjs/core', '@nestjs/schedule', 'ioredis']
      .map((pkg) => `${pkg} ${installedVersion(dir, pkg)}`)
      .join(', ');
    return { name, kind, ok: true, versions, times };
  } catch (error) {
    return { name, kind, ok: false, error, times };
  }
}

async function main() {
  const started = Date.now();
  // Installs the repository's own dependencies (tsc builds the library) and redis-server when missing.
  const deps = spawnSync(process.execPath, [path.join(__dirname, 'ensure-deps.js')], { stdio: 'inherit' });
  if (deps.status !== 0) return 1;

  work = fs.mkdtempSync(path.join(os.tmpdir(), 'nrq-compat-'));
  // Inside the repository, Node would find the monorepo's node_modules from the applications.
  if (!path.relative(root, work).startsWith('..'))
    throw new Error(`the temporary directory ${work} is inside the repository: set TMPDIR elsewhere`);
  const tarball = await pack(work);
  console.log(
    `packed ${path.basename(tarball)} (${(fs.statSync(tarball).size / 1024).toFixed(1)} kB) in ${seconds(Date.now() - started)}`,
  );
  checkReadme(tarball);

  const redis = await startRedis();
  let results;
  try {
    results = await Promise.all(APPS.map((app) => checkApp(app, tarball, redis.url)));
  } finally {
    await redis.stop();
  }

  for (const { name, kind, ok, versions, error, times } of results) {
    const timing = Object.entries(times)
      .map(([label, ms]) => `${label} ${seconds(ms)}`)
      .join(', ');
    if (ok) {
      console.log(`ok   ${name} (${kind}; ${versions}): ${timing}`);
    } else {
      console.error(`FAIL ${name} (${kind}): ${error.message}${timing ? ` [${timing}]` : ''}`);
      const output = (error.output || '').trim();
      if (output)
        console.error(
          output
            .split('\n')
            .slice(-40)
            .map((line) => `  ${name} | ${line}`)
            .join('\n'),
        );
    }
  }
  console.log(
    `compat: ${results.filter((r) => r.ok).length}/${results.length} applications passed in ${seconds(Date.now() - started)}`,
  );
  return results.every((r) => r.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`compat: ${error.message}`);
    if (error.output) console.error(error.output.trim());
    process.exit(1);
  },
);
