import { dataCommand, runData } from './data-commands';
import { globToRegExp } from './scan';
import { Keyspace } from './keyspace';
import { LuaVm } from './lua-vm';
import { MemoryClock } from './memory-clock';
import {
  ErrorReply,
  OK,
  QUEUED,
  Status,
  encodeReply,
  noScript,
  syntaxError,
  unknownCommand,
  wrongArity,
  type Reply,
} from './reply';

/** One client connection of a memory instance, as the instance sees it. */
export interface MemoryPeer {
  send(bytes: string | Buffer): void;
  /** Ends the connection from the server's side (QUIT). */
  hangUp(): void;
}

interface Session {
  peer: MemoryPeer;
  channels: Set<string>;
  /** Commands queued since MULTI; `aborted` once one was refused while queuing. */
  multi?: { commands: string[][]; aborted: boolean };
}

const INFO = [
  '# Server',
  'redis_version:7.0.15',
  'redis_mode:standalone',
  'os:in-process memory engine',
  '# Persistence',
  'loading:0',
  '# Memory',
  'maxmemory:0',
  'maxmemory_policy:noeviction',
  '# Replication',
  'role:master',
  'connected_slaves:0',
].join('\r\n');

/** Commands allowed on a connection that subscribed, as Redis (RESP2) allows. */
const SUBSCRIBED = new Set(['SUBSCRIBE', 'UNSUBSCRIBE', 'PSUBSCRIBE', 'PUNSUBSCRIBE', 'PING', 'QUIT', 'RESET']);

/**
 * A Redis of this process: keys, the Lua engine, pub/sub and connections, on a clock of its own.
 * Clients talk to it in RESP through an in-process stream (memory-connector.ts), so ioredis' own
 * code (pipelining, the offline queue, reply errors) runs as against a server. Commands run in the
 * order they arrive, each whole, a script or a MULTI as one step: one connection's replies are
 * written a turn of the event loop after its request, as a socket would deliver them.
 */
export class MemoryRedis {
  readonly keys: Keyspace;
  /** Commands run since the instance was made: the clock watches it to see when work has stopped. */
  commandsRun = 0;
  private vm?: LuaVm;
  /** SHA1s of the scripts this instance was given: the engine is shared, its script cache is not. */
  private readonly scripts = new Set<string>();
  private starting?: Promise<void>;
  private readonly sessions = new Map<MemoryPeer, Session>();
  private readonly channels = new Map<string, Set<Session>>();
  private nextClientId = 1;

  constructor(
    readonly name: string,
    readonly clock: MemoryClock,
  ) {
    this.keys = new Keyspace(() => clock.now());
  }

  /** The process' Lua engine (WebAssembly), started once; a connection waits for it before its first command. */
  ready(): Promise<void> {
    this.starting ??= LuaVm.shared().then((vm) => {
      this.vm = vm;
    });
    return this.starting;
  }

  connect(peer: MemoryPeer): void {
    this.sessions.set(peer, { peer, channels: new Set() });
  }

  disconnect(peer: MemoryPeer): void {
    const session = this.sessions.get(peer);
    if (!session) return;
    for (const channel of session.channels) this.channels.get(channel)?.delete(session);
    this.sessions.delete(peer);
  }

  /** Runs the commands a connection sent, in order, and writes their replies in one piece. */
  receive(peer: MemoryPeer, commands: string[][]): void {
    const session = this.sessions.get(peer);
    if (!session) return;
    const out: string[] = [];
    let quit = false;
    for (const args of commands) {
      this.commandsRun++;
      const reply = this.execute(session, args, out);
      if (reply !== undefined) encodeReply(reply, out);
      if (args[0]?.toUpperCase() === 'QUIT') {
        quit = true;
        break;
      }
    }
    // One string, made a buffer once by the stream: a buffer per part costs more than the reply's work.
    if (out.length > 0) peer.send(out.length === 1 ? out[0] : out.join(''));
    if (quit) peer.hangUp();
  }

  private execute(session: Session, args: string[], out: string[]): Reply | undefined {
    if (args.length === 0) return undefined;
    const name = args[0].toUpperCase();
    const rest = args.slice(1);
    if (session.channels.size > 0 && !SUBSCRIBED.has(name)) {
      return new ErrorReply(
        `ERR Can't execute '${args[0].toLowerCase()}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context`,
      );
    }
    if (session.multi && !['EXEC', 'DISCARD', 'MULTI', 'WATCH'].includes(name)) {
      const refused = this.refusal(name, rest);
      if (refused) {
        session.multi.aborted = true;
        return refused;
      }
      session.multi.commands.push(args);
      return QUEUED;
    }
    switch (name) {
      case 'MULTI':
        if (session.multi) return new ErrorReply('ERR MULTI calls can not be nested');
        session.multi = { commands: [], aborted: false };
        return OK;
      case 'EXEC': {
        const multi = session.multi;
        session.multi = undefined;
        if (!multi) return new ErrorReply('ERR EXEC without MULTI');
        if (multi.aborted) return new ErrorReply('EXECABORT Transaction discarded because of previous errors.');
        return multi.commands.map((command) => this.run(command[0].toUpperCase(), command.slice(1)));
      }
      case 'DISCARD':
        if (!session.multi) return new ErrorReply('ERR DISCARD without MULTI');
        session.multi = undefined;
        return OK;
      case 'SUBSCRIBE':
        for (const channel of rest) {
          session.channels.add(channel);
          let listeners = this.channels.get(channel);
          if (!listeners) this.channels.set(channel, (listeners = new Set()));
          listeners.add(session);
          encodeReply(['subscribe', channel, session.channels.size], out);
        }
        return undefined;
      case 'UNSUBSCRIBE': {
        const channels = rest.length > 0 ? rest : [...session.channels];
        for (const channel of channels) {
          session.channels.delete(channel);
          this.channels.get(channel)?.delete(session);
          encodeReply(['unsubscribe', channel, session.channels.size], out);
        }
        if (channels.length === 0) encodeReply(['unsubscribe', null, 0], out);
        return undefined;
      }
      case 'PING':
        if (session.channels.size > 0) return ['pong', rest[0] ?? ''];
        return rest.length > 0 ? rest[0] : new Status('PONG');
      default:
        return this.refusal(name, rest) ?? this.run(name, rest);
    }
  }

  /** Why a command is refused before it runs (unknown, wrong number of arguments), if it is. */
  private refusal(name: string, args: string[]): ErrorReply | undefined {
    const data = dataCommand(name);
    if (data) {
      if (args.length < data.min || (data.exact && args.length > data.min)) return wrongArity(name);
      return undefined;
    }
    if (name in SERVER_ARITY) return args.length < SERVER_ARITY[name] ? wrongArity(name) : undefined;
    return unknownCommand(name.toLowerCase(), args);
  }

  /** A command that may also run inside a script or a MULTI. */
  private run(name: string, args: string[]): Reply {
    const data = dataCommand(name);
    if (data) return runData(data, args, this.keys);
    const vm = this.vm!;
    switch (name) {
      case 'TIME': {
        const now = this.clock.now();
        return [String(Math.floor(now / 1000)), String((now % 1000) * 1000)];
      }
      case 'EVAL':
      case 'EVALSHA':
      case 'EVAL_RO':
      case 'EVALSHA_RO': {
        const count = Number(args[1]);
        if (!Number.isInteger(count) || count < 0) return new ErrorReply("ERR Number of keys can't be negative");
        if (count > args.length - 2) return new ErrorReply("ERR Number of keys can't be greater than number of args");
        const sha = name.startsWith('EVALSHA') ? args[0].toLowerCase() : this.load(vm, args[0]);
        if (sha instanceof ErrorReply) return sha;
        if (!this.scripts.has(sha)) return noScript();
        const keys = args.slice(2, 2 + count);
        const argv = args.slice(2 + count);
        return vm.run(sha, keys, argv, (command) => this.fromScript(command));
      }
      case 'SCRIPT': {
        const sub = args[0].toUpperCase();
        if (sub === 'LOAD' && args.length === 2) return this.load(vm, args[1]);
        if (sub === 'EXISTS') return args.slice(1).map((sha) => (this.scripts.has(sha.toLowerCase()) ? 1 : 0));
        if (sub === 'FLUSH') {
          // The engine keeps what it compiled (other instances share it); this instance forgets it.
          this.scripts.clear();
          return OK;
        }
        return syntaxError();
      }
      case 'PUBLISH':
        return this.publish(args[0], args[1]);
      case 'INFO':
        return INFO;
      case 'ECHO':
        return args[0];
      case 'SELECT':
        return args[0] === '0' ? OK : new ErrorReply('ERR DB index is out of range');
      case 'FLUSHALL':
      case 'FLUSHDB':
        this.keys.clear();
        return OK;
      case 'WAIT':
        return 0;
      case 'QUIT':
        return OK;
      case 'CLIENT': {
        const sub = args[0].toUpperCase();
        if (sub === 'ID') return this.nextClientId++;
        if (sub === 'GETNAME') return null;
        if (sub === 'LIST' || sub === 'INFO') return '';
        return OK;
      }
      case 'CONFIG': {
        if (args[0].toUpperCase() !== 'GET') return OK;
        const match = globToRegExp(args[1] ?? '*');
        return Object.entries(CONFIG)
          .filter(([key]) => match.test(key))
          .flat();
      }
      default:
        return unknownCommand(name.toLowerCase(), args);
    }
  }

  /** PUBLISH: `message` to every connection subscribed to `channel`; answers how many. */
  publish(channel: string, message: string): number {
    const listeners = [...(this.channels.get(channel) ?? [])];
    for (const session of listeners) {
      const out: string[] = [];
      encodeReply(['message', channel, message], out);
      session.peer.send(out.join(''));
    }
    return listeners.length;
  }

  /** Compiles a script (once per process) and lists it as given to this instance. */
  private load(vm: LuaVm, body: string): string | ErrorReply {
    const sha = vm.load(body);
    if (typeof sha === 'string') this.scripts.add(sha);
    return sha;
  }

  /** What `redis.call` may run: data commands and TIME, as in Redis (no scripts, no pub/sub waits). */
  private fromScript(args: string[]): Reply {
    const name = args[0].toUpperCase();
    const rest = args.slice(1);
    // Data commands first, with one lookup: most of a script's calls are, many per script.
    const data = dataCommand(name);
    if (data) {
      this.commandsRun++;
      return this.refusal(name, rest) ?? runData(data, rest, this.keys);
    }
    if (NOT_FROM_SCRIPT.has(name)) return new ErrorReply('ERR This Redis command is not allowed from script');
    this.commandsRun++;
    return this.refusal(name, rest) ?? this.run(name, rest);
  }
}

/** Commands a script may not send (`redis.call`), as Redis refuses them. */
const NOT_FROM_SCRIPT = new Set(['EVAL', 'EVALSHA', 'MULTI', 'EXEC', 'SUBSCRIBE', 'SCRIPT', 'WAIT']);

/** Least arguments of the commands that are not data commands. */
const SERVER_ARITY: Record<string, number> = {
  TIME: 0,
  EVAL: 2,
  EVALSHA: 2,
  EVAL_RO: 2,
  EVALSHA_RO: 2,
  SCRIPT: 1,
  PUBLISH: 2,
  INFO: 0,
  ECHO: 1,
  SELECT: 1,
  FLUSHALL: 0,
  FLUSHDB: 0,
  WAIT: 2,
  QUIT: 0,
  CLIENT: 1,
  CONFIG: 1,
};

const CONFIG: Record<string, string> = {
  'maxmemory-policy': 'noeviction',
  maxmemory: '0',
  appendonly: 'no',
  save: '',
};
