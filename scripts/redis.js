#!/usr/bin/env node
// Runs a private, throw-away redis-server for tests, the demo and benchmarks.
// Node's standard library only: this must work before `npm install` has run.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

const MISSING_SERVER =
  'redis-server not found: install it (Debian/Ubuntu: sudo apt-get install -y redis-server) or set REDIS_URL to a running server';
const MISSING_CLI =
  'redis-cli not found: install it (Debian/Ubuntu: sudo apt-get install -y redis-tools) or set REDIS_CLUSTER to a running cluster';

function findExecutable(name) {
  const dirs = [...(process.env.PATH || '').split(path.delimiter).filter(Boolean), '/usr/bin', '/usr/sbin'];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}

const APT_LOCK_TIMEOUT_S = 600;

// Another apt on the machine holds its locks for a while: apt waits for the dpkg lock itself
// (DPkg::Lock::Timeout), and a refresh that finds the lists locked is tried again.
function apt(...args) {
  for (let attempt = 1; ; attempt++) {
    const run = spawnSync('apt-get', ['-o', `DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT_S}`, ...args], {
      stdio: ['ignore', 2, 'pipe'], // keep our stdout clean: callers may parse it
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (run.stderr) process.stderr.write(run.stderr);
    if (run.status === 0 || attempt >= 30 || !/could not get lock|unable to (acquire|lock)/i.test(run.stderr ?? ''))
      return run;
    spawnSync('sleep', ['10']);
  }
}

/** Returns the binary's path, installing `aptPackage` first when it is missing and we are root. */
function ensureExecutable(name, aptPackage, missingMessage, installArgs = []) {
  const found = findExecutable(name);
  if (found) return found;
  if (process.getuid?.() !== 0) throw new Error(missingMessage);

  apt('update'); // a failed refresh may still leave a usable package cache, so carry on
  const install = apt('install', '-y', ...installArgs, aptPackage);
  const installed = findExecutable(name);
  if (installed) return installed;
  const why = install.error ? install.error.message : `exit code ${install.status}`;
  throw new Error(`${name} not found and "apt-get install -y ${aptPackage}" failed (${why}): ${missingMessage}`);
}

const SOURCES_DIR = '/etc/apt/sources.list.d';
const BACKPORTS_SOURCE = path.join(SOURCES_DIR, 'nrq-backports.sources');

function debianCodename() {
  const release = fs.readFileSync('/etc/os-release', 'utf8');
  const codename = /^VERSION_CODENAME=("?)([a-z]+)\1$/m.exec(release)?.[2];
  if (!codename)
    throw new Error('/etc/os-release names no VERSION_CODENAME: this is not a Debian release apt can extend');
  return codename;
}

/**
 * The machine's own Debian source for `codename`, as a deb822 stanza for `<codename>-backports`:
 * the same mirror and keyring, so nothing here names a package host.
 */
function backportsStanza(codename) {
  const files = fs.existsSync(SOURCES_DIR) ? fs.readdirSync(SOURCES_DIR).map((f) => path.join(SOURCES_DIR, f)) : [];
  for (const file of files.filter((f) => f.endsWith('.sources') && f !== BACKPORTS_SOURCE)) {
    for (const stanza of fs.readFileSync(file, 'utf8').split(/\n\s*\n/)) {
      const lines = stanza.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
      const field = (name) => lines.find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`));
      const suites = field('Suites')?.split(':')[1].trim().split(/\s+/) ?? [];
      if (!suites.includes(codename) || /^enabled:\s*no/im.test(stanza)) continue;
      return lines.map((line) => (line === field('Suites') ? `Suites: ${codename}-backports` : line)).join('\n') + '\n';
    }
  }
  const lists = ['/etc/apt/sources.list', ...files.filter((f) => f.endsWith('.list'))].filter((f) => fs.existsSync(f));
  for (const file of lists) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      // deb [options] uri suite component...
      const match = /^deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.+)$/.exec(line.trim());
      if (!match || match[3] !== codename) continue;
      const signedBy = /signed-by=(\S+?)\]?(\s|$)/.exec(match[1] ?? '')?.[1];
      return (
        ['Types: deb', `URIs: ${match[2]}`, `Suites: ${codename}-backports`, `Components: ${match[4].trim()}`]
          .concat(signedBy ? [`Signed-By: ${signedBy}`] : [])
          .join('\n') + '\n'
      );
    }
  }
  throw new Error(`no apt source for Debian "${codename}" to add ${codename}-backports to`);
}

const MISSING_VALKEY =
  'valkey-server not found: install Valkey 8 (Debian 12: add the bookworm-backports suite to your apt source, ' +
  'then apt-get install -t bookworm-backports valkey-server)';

/** Valkey 8 comes from Debian's backports: the suite is added beside the machine's own source first. */
function ensureValkeyServer() {
  const found = findExecutable('valkey-server');
  if (found || process.getuid?.() !== 0)
    return found ?? ensureExecutable('valkey-server', 'valkey-server', MISSING_VALKEY);
  const codename = debianCodename();
  if (!fs.existsSync(BACKPORTS_SOURCE)) fs.writeFileSync(BACKPORTS_SOURCE, backportsStanza(codename));
  return ensureExecutable('valkey-server', 'valkey-server', MISSING_VALKEY, ['-t', `${codename}-backports`]);
}

const findRedisServer = () => findExecutable('redis-server');
const findValkeyServer = () => findExecutable('valkey-server');
const findRedisCli = () => findExecutable('redis-cli');
const ensureRedisServer = () => ensureExecutable('redis-server', 'redis-server', MISSING_SERVER);
const ensureRedisCli = () => ensureExecutable('redis-cli', 'redis-tools', MISSING_CLI);

/** Resolves with a loopback port that was free a moment ago (`port` 0 lets the kernel pick one). */
function freePort(port = 0, host = HOST) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: picked } = server.address();
      server.close(() => resolve(picked));
    });
  });
}

/**
 * Sends one command on a fresh connection. Resolves with the reply of a simple, integer or bulk
 * string reply (null for a nil bulk); rejects on an error reply, a timeout or a connection failure.
 */
function redisCommand(port, args, { host = HOST, timeoutMs = 1_000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host });
    let buffer = Buffer.alloc(0);
    const finish = (err, value) => {
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`no reply from ${host}:${port} within ${timeoutMs} ms`)));
    socket.on('error', finish);
    socket.on('close', () => finish(new Error(`connection to ${host}:${port} closed before a reply`)));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      const eol = buffer.indexOf('\r\n');
      if (eol < 0) return;
      const head = buffer.toString('utf8', 1, eol);
      switch (String.fromCharCode(buffer[0])) {
        case '+':
          return finish(null, head);
        case '-':
          return finish(new Error(head));
        case ':':
          return finish(null, Number(head));
        case '$': {
          const length = Number(head);
          if (length < 0) return finish(null, null);
          if (buffer.length < eol + 2 + length + 2) return undefined; // wait for the rest
          return finish(null, buffer.toString('utf8', eol + 2, eol + 2 + length));
        }
        default:
          return finish(new Error(`unsupported reply type ${JSON.stringify(buffer.toString('utf8', 0, 1))}`));
      }
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`);
  });
}

// Children still running when this process exits are killed, so none outlives the tests that
// started it. An 'exit' handler may only do synchronous work, which SIGKILL and rmSync are.
const running = new Map(); // ChildProcess -> temp dir to remove (or null)
process.on('exit', () => {
  for (const [child, dir] of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
});

const isRunning = (child) => child.exitCode === null && child.signalCode === null;

/**
 * Starts a redis-server (or the binary `server()` returns, such as valkey-server) on 127.0.0.1 and
 * resolves once it answers PING.
 * The server does not keep this process alive; it is SIGKILLed when this process exits.
 * `exited` settles when the server exits for any reason (awaiting it alone does not keep the
 * process alive); `kill(signal)` signals it and waits; `stop()` shuts it down and removes `dir`
 * if it was created here.
 * @returns {Promise<{url: string, port: number, host: string, dir: string, pid: number,
 *   exited: Promise<{code: number|null, signal: string|null}>,
 *   kill(signal?: string): Promise<void>, stop(): Promise<void>}>}
 */
async function startRedis({ port, appendonly = false, extraArgs = [], dir, server = ensureRedisServer } = {}) {
  const bin = server();
  const ownsDir = !dir;
  const dataDir = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'nrq-redis-'));
  try {
    // A port picked here can be taken by someone else before redis binds it: retry that case.
    for (let attempt = 1; ; attempt++) {
      const chosen = port || (await freePort());
      try {
        return await launch(bin, chosen, dataDir, ownsDir, appendonly, extraArgs);
      } catch (err) {
        if (port || attempt >= 3 || !/address already in use/i.test(err.message)) throw err;
      }
    }
  } catch (err) {
    if (ownsDir) fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

async function launch(bin, port, dir, ownsDir, appendonly, extraArgs) {
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    appendonly ? 'yes' : 'no',
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    '',
    ...extraArgs,
  ];
  // Its own process group: a terminal's Ctrl-C goes to the app, which shuts down while Redis still
  // serves it; whoever started Redis stops it afterwards.
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const output = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (text) => {
      output.push(...text.split('\n').filter((line) => line.trim()));
      output.splice(0, output.length - 30);
    });
  }
  const lastOutput = () => (output.length ? `; last output:\n  ${output.slice(-15).join('\n  ')}` : '');
  const exited = new Promise((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  running.set(child, ownsDir ? dir : null);
  exited.then(() => running.delete(child));

  let exit = null;
  exited.then((info) => {
    exit = info;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  // Another server may already own a port we were given: only a PONG from our own child counts.
  const ours = () =>
    redisCommand(port, ['INFO', 'server'], { timeoutMs: 500 }).then((info) =>
      info.includes(`process_id:${child.pid}\r\n`),
    );
  for (;;) {
    const pong = await redisCommand(port, ['PING'], { timeoutMs: 500 }).then(
      (r) => r === 'PONG',
      () => false,
    );
    if (pong && !exit && (await ours().catch(() => false))) break;
    if (exit) {
      // 'exit' can precede the last output; 'close' comes once the pipes are drained.
      await Promise.race([new Promise((resolve) => child.once('close', resolve)), sleep(500)]);
      const how = exit.error ? exit.error.message : exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
      throw new Error(`redis-server on ${HOST}:${port} exited before accepting connections (${how})${lastOutput()}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(
        `redis-server on ${HOST}:${port} did not answer PING within ${READY_TIMEOUT_MS / 1000} s${lastOutput()}`,
      );
    }
    await sleep(50);
  }

  // The caller decides how long to live; a forgotten server must not hold the event loop open.
  child.unref();
  child.stdout.unref();
  child.stderr.unref();

  /** Sends `signal` (unless the server is already gone) and resolves once it has exited. */
  const kill = async (signal = 'SIGKILL') => {
    if (!isRunning(child)) return;
    child.ref(); // an unref'd child would let the process exit before the 'exit' event arrives
    child.kill(signal);
    const escalate = signal === 'SIGKILL' ? null : setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(escalate);
  };
  let stopping = null;
  const stop = () =>
    (stopping ??= (async () => {
      await kill('SIGTERM');
      if (ownsDir) fs.rmSync(dir, { recursive: true, force: true });
    })());

  return { url: `redis://${HOST}:${port}`, port, host: HOST, dir, pid: child.pid, exited, kill, stop };
}

/** Runs `start`, prints `line(handle)`, and stays up until SIGINT/SIGTERM or until `exited` settles. */
function serveUntilSignalled(start, line, name) {
  start().then(
    (handle) => {
      console.log(line(handle));
      const keepAlive = setInterval(() => {}, 1 << 30); // the servers themselves are unref'd
      let shuttingDown = false;
      const shutdown = (code) => {
        if (shuttingDown) return;
        shuttingDown = true;
        clearInterval(keepAlive);
        handle.stop().then(
          () => process.exit(code),
          (err) => {
            console.error(err.message);
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', () => shutdown(0));
      process.once('SIGTERM', () => shutdown(0));
      // Ctrl-C in a terminal reaches the server too (same process group), so give our own
      // SIGINT handler a moment to win before calling the server's exit unexpected.
      handle.exited?.then(() =>
        setTimeout(() => {
          if (shuttingDown) return;
          console.error(`${name} exited unexpectedly`);
          shutdown(1);
        }, 200),
      );
    },
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}

module.exports = {
  ensureExecutable,
  findRedisServer,
  findRedisCli,
  ensureRedisServer,
  ensureRedisCli,
  findValkeyServer,
  ensureValkeyServer,
  freePort,
  redisCommand,
  startRedis,
  serveUntilSignalled,
};

if (require.main === module) {
  serveUntilSignalled(
    () => startRedis(),
    (redis) => `REDIS_URL=${redis.url}`,
    'redis-server',
  );
}
