#!/usr/bin/env node
// Usage: npm run compat
// Follows the README in fresh applications outside the repository, with the library as it would be
// published: compat/nest11 and compat/nest12 hold what `nest new` writes for that major (package.json
// without the CLI and linters, tsconfig.json, tsconfig.build.json, vitest.config.ts), so the
// applications have the compiler options and test runner a newcomer's has. For each application it
// installs the template, then runs the README's Install lines for its major with the packed tarball
// for nestjs-redis-queues; writes the README's Example and every TypeScript block of the documentation
// for that major into src/ (scripts/snippets.js), beside compat/app/ (a run of its own that checks
// what arrives, and a test of the optional packages); type-checks everything with tsconfig.json,
// builds with tsconfig.build.json, runs the build against a private redis-server once per way of
// giving the connection (a URL, or a client of the application's own), and runs `npm test`: the
// README's first test and the optional packages' test, with jest (Nest 11) or vitest (Nest 12).
// The packed README is checked first: it must not link to files the package does not ship.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { codeBlocks, read } = require('./docs');
const { relativeLinks } = require('./pack-docs');
const { startRedis } = require('./redis');
const { snippets } = require('./snippets');

const root = path.join(__dirname, '..');
// `extra`: installed after the README's lines. DOCS_DEPENDENCIES are what the documentation's examples
// use besides them (@nestjs/config for configuration, wasmoon-lua5.1 for memory:// in tests); the README installs the newest ioredis (6), so
// ioredis 5 gets an application of its own.
const APPS = [
  { name: 'nest11', template: 'nest11', kind: 'Nest 11, CommonJS, jest', connections: ['url', 'client'], extra: [] },
  { name: 'nest12', template: 'nest12', kind: 'Nest 12, ES module, vitest', connections: ['url'], extra: [] },
  {
    name: 'ioredis5',
    template: 'nest11',
    kind: 'Nest 11, CommonJS, jest, ioredis 5',
    connections: ['url', 'client'],
    extra: ['ioredis@^5.4.0'],
  },
];
// As docs/configuration.md says: @nestjs/config 12 is ES modules only, which jest in a Nest 11 app cannot load.
const DOCS_DEPENDENCIES = {
  nest11: ['@nestjs/config@^4', 'wasmoon-lua5.1'],
  nest12: ['@nestjs/config', 'wasmoon-lua5.1'],
};
const INSTALL_TIMEOUT_MS = 5 * 60_000;
const BUILD_TIMEOUT_MS = 2 * 60_000;
const RUN_TIMEOUT_MS = 60_000;
// The tests run 200 short cases of QueueClock.advance (clock-settles.spec.ts) beside the others, and the
// three applications test at once on two cores.
const TEST_TIMEOUT_MS = 4 * 60_000;

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

/** The packages of each `npm install` line of the README's Install block for `major` (nest11, nest12). */
function installLines(major) {
  const block = codeBlocks(read('README.md')).find((b) => b.lang === 'bash' && b.attributes.only === major);
  if (!block) throw new Error(`README.md has no \`\`\`bash only=${major} block of install lines`);
  return block.code
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((line) => {
      const words = line.split(/\s+/);
      if (words[0] !== 'npm' || words[1] !== 'install')
        throw new Error(`README.md (${major}): not an npm install: ${line}`);
      return words.slice(2);
    });
}

function installedVersion(dir, pkg) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

/** Creates one application in `dir` from compat/<name>, installs, builds and runs it. */
async function checkApp({ name, template, kind, connections, extra }, tarball, redisUrl) {
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
    fs.cpSync(path.join(root, 'compat', template), dir, { recursive: true });
    const npmInstall = (packages) =>
      run('npm', ['install', '--no-audit', '--no-fund', '--loglevel', 'warn', ...packages], {
        cwd: dir,
        timeoutMs: INSTALL_TIMEOUT_MS,
      });
    await step('install', async () => {
      await npmInstall([]);
      for (const line of installLines(template))
        await npmInstall(line.map((pkg) => (pkg === 'nestjs-redis-queues' ? tarball : pkg)));
      await npmInstall([...DOCS_DEPENDENCIES[template], ...extra]);
    });

    fs.cpSync(path.join(root, 'compat', 'app'), path.join(dir, 'src'), { recursive: true });
    for (const snippet of snippets(template)) {
      const file = path.join(dir, snippet.file);
      if (fs.existsSync(file)) throw new Error(`${snippet.page}:${snippet.line} would overwrite ${snippet.file}`);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, snippet.code);
    }
    const library = path.join(dir, 'node_modules', 'nestjs-redis-queues');
    if (fs.lstatSync(library).isSymbolicLink())
      throw new Error('nestjs-redis-queues was linked, not installed from the tarball');
    const tsc = (args) =>
      run(process.execPath, [path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], {
        cwd: dir,
        timeoutMs: BUILD_TIMEOUT_MS,
      });
    await step('typecheck', () => tsc(['-p', 'tsconfig.json', '--noEmit']));
    await step('build', () => tsc(['-p', 'tsconfig.build.json']));
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
    const tested = await step('npm test', () =>
      run('npm', ['test', '--silent'], {
        cwd: dir,
        env: { ...cleanEnv, REDIS_URL: redisUrl, CI: 'true' },
        timeoutMs: TEST_TIMEOUT_MS,
      }),
    );
    // A runner that finds no test, or skips one, passes too: each must have run (pets-memory.spec.ts: the
    // testing page's feed → hungry flow on memory://, no Redis server, moved by QueueClock.advance;
    // pets-both.spec.ts: the same spec on memory:// and on Redis with passTime; clock-settles.spec.ts:
    // handlers that write to queues while advance steps, 50 runs of each case).
    for (const spec of [
      'app.spec.ts',
      'optional-peers.spec.ts',
      'pets-memory.spec.ts',
      'pets-both.spec.ts',
      'clock-settles.spec.ts',
    ])
      if (!tested.includes(spec))
        throw Object.assign(new Error(`npm test did not run src/${spec}`), { output: tested });
    const versions = ['@nestjs/core', '@nestjs/schedule', '@nestjs/terminus', 'ioredis', 'typescript']
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

  // COMPAT_APPS=nest11,nest12 checks only those (while working on one); CI checks them all.
  const only = process.env.COMPAT_APPS?.split(',').filter(Boolean);
  const selected = only ? APPS.filter((app) => only.includes(app.name)) : APPS;
  if (only && selected.length !== only.length)
    throw new Error(
      `COMPAT_APPS names ${only.join(', ')}; the applications are ${APPS.map((app) => app.name).join(', ')}`,
    );

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
    results = await Promise.all(selected.map((app) => checkApp(app, tarball, redis.url)));
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
