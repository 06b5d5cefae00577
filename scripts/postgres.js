#!/usr/bin/env node
// Usage: node scripts/postgres.js                  prints DATABASE_URL, serves until Ctrl-C
//        node scripts/postgres.js <cmd> [args...]  runs the command with DATABASE_URL set, then stops
// A private, throw-away PostgreSQL server (Debian's `postgresql` package) on a free loopback port, for
// the demo's suites on a real server. Node's standard library only, as scripts/redis.js.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ensureExecutable, freePort, serveUntilSignalled } = require('./redis');

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
// Debian keeps each major's server binaries off the PATH, in /usr/lib/postgresql/<major>/bin.
const DEBIAN_BINARIES = '/usr/lib/postgresql';
const MISSING =
  'PostgreSQL not found: install it (Debian/Ubuntu: sudo apt-get install -y postgresql) or set DATABASE_URL to a running server';

/** The directory of the newest installed major's initdb and postgres, or null. */
function findServerBin() {
  const majors = fs.existsSync(DEBIAN_BINARIES)
    ? fs
        .readdirSync(DEBIAN_BINARIES)
        .filter((major) => fs.existsSync(path.join(DEBIAN_BINARIES, major, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length > 0) return path.join(DEBIAN_BINARIES, majors[0], 'bin');
  const initdb = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  return initdb ? path.dirname(initdb) : null;
}

/** As root, a missing server is installed from Debian's `postgresql` package (apt-get update first). */
function ensureServerBin() {
  const found = findServerBin();
  if (found) return found;
  // The package puts nothing named `postgres` on the PATH; `pg_ctlcluster` is its wrapper that is.
  ensureExecutable('pg_ctlcluster', 'postgresql', MISSING);
  const installed = findServerBin();
  if (!installed) throw new Error(MISSING);
  return installed;
}

/**
 * PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user the Debian
 * package creates, on a data directory given to that user.
 */
function serverUser() {
  if (process.getuid?.() !== 0) return null;
  const entry = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (!entry) throw new Error('running as root, and there is no `postgres` user to run PostgreSQL as');
  const [, , uid, gid] = entry.split(':');
  return { name: 'postgres', uid: Number(uid), gid: Number(gid) };
}

function command(user, bin, args) {
  return user ? ['runuser', ['-u', user.name, '--', bin, ...args]] : [bin, args];
}

/**
 * Starts a server (initdb, then postgres) and resolves once it accepts connections.
 * @returns {Promise<{url: string, port: number, dir: string, stop(): Promise<void>}>}
 */
async function startPostgres() {
  const bin = ensureServerBin();
  const user = serverUser();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nrq-postgres-'));
  const data = path.join(dir, 'data');
  fs.mkdirSync(data);
  if (user) {
    fs.chownSync(dir, user.uid, user.gid);
    fs.chownSync(data, user.uid, user.gid);
  }
  try {
    const [initdb, initdbArgs] = command(user, path.join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
    const init = spawnSync(initdb, initdbArgs, { encoding: 'utf8', cwd: dir });
    if (init.status !== 0)
      throw new Error(`initdb failed (${init.error?.message ?? `exit code ${init.status}`}): ${init.stderr.trim()}`);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        return await launch(bin, user, dir, data, port);
      } catch (err) {
        if (attempt >= 3 || !/address already in use|could not (bind|create listen)/i.test(err.message)) throw err;
      }
    }
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function launch(bin, user, dir, data, port) {
  // Throw-away data: nothing is flushed to disk.
  const [postgres, args] = command(user, path.join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    `listen_addresses=${HOST}`,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
  ]);
  // Its own process group: a terminal's Ctrl-C reaches the command using it first, as with redis.js.
  const child = spawn(postgres, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: dir });
  const output = [];
  let ready;
  const started = new Promise((resolve) => (ready = resolve));
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (text) => {
      output.push(...text.split('\n').filter((line) => line.trim()));
      output.splice(0, output.length - 30);
      if (/database system is ready to accept connections/.test(text)) ready();
    });
  }
  const exited = new Promise((resolve) => {
    child.once('error', (error) => resolve({ error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let timer;
  const outcome = await Promise.race([
    started.then(() => 'ready'),
    exited.then(() => 'exited'),
    new Promise((resolve) => (timer = setTimeout(resolve, READY_TIMEOUT_MS, 'timeout'))),
  ]);
  clearTimeout(timer);
  const lastOutput = () => (output.length ? `; last output:\n  ${output.slice(-15).join('\n  ')}` : '');
  if (outcome !== 'ready') {
    signal(data, 'SIGKILL');
    child.kill('SIGKILL');
    throw new Error(`postgres on ${HOST}:${port} did not start (${outcome})${lastOutput()}`);
  }
  child.unref();
  child.stdout.unref();
  child.stderr.unref();

  let stopping = null;
  const stop = () =>
    (stopping ??= (async () => {
      child.ref();
      // Fast shutdown; the server itself, not the runuser in front of it.
      const send = (name) => {
        if (!signal(data, name)) child.kill(name);
      };
      if (child.exitCode === null && child.signalCode === null) send('SIGINT');
      const escalate = setTimeout(() => send('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(escalate);
      fs.rmSync(dir, { recursive: true, force: true });
    })());
  return { url: `postgres://postgres@${HOST}:${port}/postgres`, port, dir, stop };
}

/** Signals the postmaster named in the data directory's postmaster.pid; false when there is none. */
function signal(data, name) {
  try {
    const pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

async function runWith(cmd, args) {
  const server = await startPostgres();
  console.error(`[postgres] started a private PostgreSQL on ${server.url} (data in a temporary dir)`);
  try {
    return await new Promise((resolve) => {
      const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, DATABASE_URL: server.url } });
      for (const name of ['SIGINT', 'SIGTERM']) process.on(name, () => child.kill(name));
      child.once('error', (err) => {
        console.error(`[postgres] cannot run ${cmd}: ${err.message}`);
        resolve(127);
      });
      child.once('exit', (code, sig) => resolve(code ?? 128 + (os.constants.signals[sig] || 0)));
    });
  } finally {
    await server.stop();
  }
}

module.exports = { startPostgres };

if (require.main === module) {
  const [cmd, ...args] = process.argv.slice(2);
  if (!cmd) {
    serveUntilSignalled(startPostgres, (server) => `DATABASE_URL=${server.url}`, 'postgres');
  } else {
    runWith(cmd, args).then(
      (code) => process.exit(code),
      (err) => {
        console.error(`[postgres] ${err.message}`);
        process.exit(1);
      },
    );
  }
}
