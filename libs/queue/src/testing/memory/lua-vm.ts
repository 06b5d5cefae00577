import { createHash } from 'node:crypto';
import { createLuaModule, type LuaModule } from './lua-wasm';
import { LUA_PRELUDE } from './lua-prelude';
import { ErrorReply, Status, noScript, type Reply } from './reply';

const REGISTRY = -10000;
const GLOBALS = -10002;
const NIL = 0;
const BOOLEAN = 1;
const NUMBER = 3;
const STRING = 4;
const TABLE = 5;

/** A command a script sends with `redis.call`: its name and arguments as Redis reads them (text). */
export type ScriptCommand = (args: string[]) => Reply;

let shared: Promise<LuaVm> | undefined;

export const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

/** Redis turns a Lua number argument into text this way: integers without a fraction. */
const argumentText = (value: number) => (Number.isInteger(value) ? value.toFixed(0) : String(value));

/**
 * Lua 5.1 (the Lua of Redis: numbers are doubles) compiled to WebAssembly, running the library's
 * scripts as Redis does: KEYS and ARGV globals, `redis.call` into the engine's commands, Redis'
 * conversions between Lua values and replies, compiled scripts kept by SHA1 for the life of the process.
 * It talks to Lua through its C API directly, with its own UTF-8 marshalling: the package's
 * convenience layer converts tables lossily and costs several times more per call.
 */
export class LuaVm {
  private readonly scripts = new Map<string, number>();
  private scratch: number;
  private scratchSize = 1 << 16;
  private readonly length: number;
  private readonly names: Record<'KEYS' | 'ARGV' | 'ok' | 'err' | 'chunk', number>;
  private heapView: Buffer = Buffer.alloc(0);
  /** The command function of the script that runs now. */
  private command?: ScriptCommand;

  private constructor(
    private readonly lua: LuaModule,
    private readonly state: number,
  ) {
    this.scratch = lua._malloc(this.scratchSize);
    this.length = lua._malloc(8);
    const name = (text: string) => {
      const bytes = Buffer.from(`${text}\0`);
      const pointer = lua._malloc(bytes.length);
      lua.HEAPU8.set(bytes, pointer);
      return pointer;
    };
    this.names = {
      KEYS: name('KEYS'),
      ARGV: name('ARGV'),
      ok: name('ok'),
      err: name('err'),
      chunk: name('@user_script'),
    };
    lua._lua_pushcclosure(
      state,
      lua.addFunction((L) => this.call(L)),
      0,
    );
    lua._lua_setfield(state, GLOBALS, name('__nrq_call'));
    const prelude = this.compile(LUA_PRELUDE);
    if (prelude instanceof ErrorReply) throw new Error(prelude.message);
    lua._lua_rawgeti(state, REGISTRY, prelude);
    if (lua._lua_pcall(state, 0, 0, 0) !== 0) throw new Error(this.text(-1));
  }

  /**
   * The process' engine, started once and shared by every memory instance: starting one (compiling
   * the WebAssembly, creating the Lua state) costs a few hundred ms on a busy machine, which a test
   * would otherwise pay in its first case, and every instance again. Sharing is safe: scripts run one
   * at a time, to completion, and Redis' scripts keep no state between calls (each instance keeps the
   * list of scripts it was given, for NOSCRIPT and SCRIPT FLUSH).
   */
  static shared(): Promise<LuaVm> {
    shared ??= LuaVm.create().catch((error: unknown) => {
      shared = undefined;
      throw error;
    });
    return shared;
  }

  static async create(): Promise<LuaVm> {
    const lua = await createLuaModule();
    const state = lua._luaL_newstate();
    lua._luaL_openlibs(state);
    return new LuaVm(lua, state);
  }

  /** SCRIPT LOAD: compiles and keeps the script; its SHA1, or the compile error. */
  load(body: string): string | ErrorReply {
    const sha = sha1(body);
    if (this.scripts.has(sha)) return sha;
    const ref = this.compile(body);
    if (ref instanceof ErrorReply) return ref;
    this.scripts.set(sha, ref);
    return sha;
  }

  /** EVALSHA: runs a loaded script, `command` serving its redis.call. */
  run(sha: string, keys: string[], args: string[], command: ScriptCommand): Reply {
    const ref = this.scripts.get(sha.toLowerCase());
    if (ref === undefined) return noScript();
    const { lua, state } = this;
    this.globalArray(this.names.KEYS, keys);
    this.globalArray(this.names.ARGV, args);
    lua._lua_rawgeti(state, REGISTRY, ref);
    this.command = command;
    try {
      if (lua._lua_pcall(state, 0, 1, 0) !== 0) return this.scriptError(sha);
      return this.reply(-1);
    } finally {
      this.command = undefined;
      lua._lua_settop(state, 0);
    }
  }

  private compile(body: string): number | ErrorReply {
    const { lua, state } = this;
    const size = this.write(body);
    if (lua._luaL_loadbuffer(state, this.scratch, size, this.names.chunk) !== 0) {
      const message = this.text(-1);
      lua._lua_settop(state, 0);
      return new ErrorReply(`ERR Error compiling script (new function): ${message}`);
    }
    return lua._luaL_ref(state, REGISTRY);
  }

  /** An uncaught error: a `{ err = ... }` table (a failed redis.call, redis.error_reply) or Lua's own. */
  private scriptError(sha: string): ErrorReply {
    const { lua, state } = this;
    if (lua._lua_type(state, -1) === TABLE) {
      lua._lua_getfield(state, -1, this.names.err);
      if (lua._lua_type(state, -1) === STRING) return new ErrorReply(this.text(-1));
    }
    const message = lua._lua_type(state, -1) === STRING ? this.text(-1) : 'unknown error';
    return new ErrorReply(`ERR ${message} script: ${sha}, on @user_script.`);
  }

  /** Redis' rules from a Lua value to a reply. */
  private reply(index: number): Reply {
    const { lua, state } = this;
    switch (lua._lua_type(state, index)) {
      case NUMBER:
        return Math.trunc(lua._lua_tonumber(state, index));
      case STRING:
        return this.text(index);
      case BOOLEAN:
        return lua._lua_toboolean(state, index) ? 1 : null;
      case TABLE:
        return this.tableReply(index);
      default:
        return null;
    }
  }

  private tableReply(index: number): Reply {
    const { lua, state } = this;
    const at = lua._lua_gettop(state) + index + 1;
    for (const [field, make] of [
      [this.names.err, (text: string) => new ErrorReply(text)],
      [this.names.ok, (text: string) => new Status(text)],
    ] as const) {
      lua._lua_getfield(state, at, field);
      const found = lua._lua_type(state, -1) === STRING ? make(this.text(-1)) : undefined;
      lua._lua_settop(state, -2);
      if (found) return found;
    }
    const items: Reply[] = [];
    for (let i = 1; ; i++) {
      lua._lua_rawgeti(state, at, i);
      if (lua._lua_type(state, -1) === NIL) {
        lua._lua_settop(state, -2);
        return items;
      }
      items.push(this.reply(-1));
      lua._lua_settop(state, -2);
    }
  }

  /** `redis.call` / `redis.pcall`: runs the command and pushes its reply (an error as `{ err = ... }`). */
  private call(L: number): number {
    const { lua } = this;
    const count = lua._lua_gettop(L);
    const args: string[] = [];
    let reply: Reply;
    for (let i = 1; i <= count; i++) {
      const type = lua._lua_type(L, i);
      if (type === NUMBER) args.push(argumentText(lua._lua_tonumber(L, i)));
      else if (type === STRING) args.push(this.text(i, L));
      else break;
    }
    if (count === 0) reply = new ErrorReply('ERR Please specify at least one argument for this redis lib call');
    else if (args.length < count)
      reply = new ErrorReply('ERR Lua redis lib command arguments must be strings or integers');
    else if (!this.command) reply = new ErrorReply('ERR redis.call outside a script');
    else {
      try {
        reply = this.command(args);
      } catch (error) {
        reply = new ErrorReply(`ERR ${(error as Error).message}`);
      }
    }
    lua._lua_settop(L, 0);
    this.push(reply, L);
    return 1;
  }

  /** Redis' rules from a reply to a Lua value. */
  private push(reply: Reply, L = this.state): void {
    const { lua } = this;
    if (typeof reply === 'string') {
      const size = this.write(reply);
      lua._lua_pushlstring(L, this.scratch, size);
    } else if (typeof reply === 'number') {
      lua._lua_pushnumber(L, reply);
    } else if (reply === null) {
      lua._lua_pushboolean(L, 0);
    } else if (Array.isArray(reply)) {
      lua._lua_createtable(L, reply.length, 0);
      for (let i = 0; i < reply.length; i++) {
        this.push(reply[i], L);
        lua._lua_rawseti(L, -2, i + 1);
      }
    } else {
      lua._lua_createtable(L, 0, 1);
      this.push(reply instanceof Status ? reply.text : reply.message, L);
      lua._lua_setfield(L, -2, reply instanceof Status ? this.names.ok : this.names.err);
    }
  }

  private globalArray(name: number, items: string[]): void {
    const { lua, state } = this;
    lua._lua_createtable(state, items.length, 0);
    for (let i = 0; i < items.length; i++) {
      const size = this.write(items[i]);
      lua._lua_pushlstring(state, this.scratch, size);
      lua._lua_rawseti(state, -2, i + 1);
    }
    lua._lua_setfield(state, GLOBALS, name);
  }

  /** Writes `text` as UTF-8 into the scratch buffer (grown as needed); its length in bytes. */
  private write(text: string): number {
    const most = text.length * 3;
    if (most > this.scratchSize) {
      this.lua._free(this.scratch);
      this.scratchSize = most;
      this.scratch = this.lua._malloc(most);
    }
    return this.heap().write(text, this.scratch, most, 'utf8');
  }

  private text(index: number, L = this.state): string {
    const { lua } = this;
    const pointer = lua._lua_tolstring(L, index, this.length);
    const heap = this.heap();
    const size = heap.readUInt32LE(this.length);
    return heap.toString('utf8', pointer, pointer + size);
  }

  /**
   * The WebAssembly memory as a Buffer, kept while the memory keeps its buffer: a script passes dozens
   * of strings each way, and a view made for each costs more than the copy. Growing the memory detaches
   * the buffer it had, and a view of a detached buffer is empty: that is when a new one is made (asking
   * the memory for its buffer at each string costs as much again).
   */
  private heap(): Buffer {
    if (this.heapView.length === 0) this.heapView = Buffer.from(this.lua.HEAPU8.buffer);
    return this.heapView;
  }
}
