import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { missingPeer } from '../../queue.messages';

/** Lua's C API in the WebAssembly build, as the engine calls it (pointers are offsets in `HEAPU8`). */
export interface LuaModule {
  readonly HEAPU8: Uint8Array;
  readonly HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  addFunction(fn: (state: number) => number): number;
  _luaL_newstate(): number;
  _luaL_openlibs(state: number): void;
  _luaL_loadbuffer(state: number, buffer: number, size: number, name: number): number;
  _luaL_ref(state: number, table: number): number;
  _luaL_unref(state: number, table: number, ref: number): void;
  _lua_pcall(state: number, args: number, results: number, handler: number): number;
  _lua_gettop(state: number): number;
  _lua_settop(state: number, index: number): void;
  _lua_type(state: number, index: number): number;
  _lua_tonumber(state: number, index: number): number;
  _lua_toboolean(state: number, index: number): number;
  _lua_tolstring(state: number, index: number, length: number): number;
  _lua_pushlstring(state: number, text: number, length: number): void;
  _lua_pushnumber(state: number, value: number): void;
  _lua_pushboolean(state: number, value: number): void;
  _lua_pushcclosure(state: number, fn: number, upvalues: number): void;
  _lua_createtable(state: number, array: number, record: number): void;
  _lua_rawseti(state: number, index: number, n: number): void;
  _lua_rawgeti(state: number, index: number, n: number): void;
  _lua_setfield(state: number, index: number, name: number): void;
  _lua_getfield(state: number, index: number, name: number): void;
}

/** The part of the WebAssembly API used here (the library's TypeScript lib has no DOM types). */
interface Memory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Table {
  get(index: number): unknown;
  set(index: number, value: unknown): void;
  grow(count: number): number;
}
interface Instance {
  readonly exports: Record<string, unknown>;
}
declare const WebAssembly: {
  instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: Instance }>;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => Instance;
};

type Exports = Record<string, (...args: number[]) => number> & {
  memory: Memory;
  __indirect_function_table: Table;
};

/** wasi/emscripten error numbers the stubs answer with. */
const EBADF = 8;
const ENOSYS = 52;

/**
 * A module of one function `(i32) -> i32` imported as `e.f` and exported as `f`: how a JavaScript
 * function becomes a Lua C function (an entry of the function table), as Emscripten's `addFunction` does.
 */
const C_FUNCTION_WRAPPER = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00, // header
  0x01,
  0x06,
  0x01,
  0x60,
  0x01,
  0x7f,
  0x01,
  0x7f, // types: (i32) -> i32
  0x02,
  0x07,
  0x01,
  0x01,
  0x65,
  0x01,
  0x66,
  0x00,
  0x00, // import "e" "f"
  0x07,
  0x05,
  0x01,
  0x01,
  0x66,
  0x00,
  0x00, // export "f"
]);

/**
 * The WebAssembly file wasmoon-lua5.1 publishes beside its entry file, where the package's own loader
 * finds it (its `customWasmUri` option names the same file elsewhere).
 */
function wasmFile(): string {
  try {
    return join(dirname(require.resolve('wasmoon-lua5.1')), 'liblua5.1.wasm');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND')
      throw missingPeer("connection: 'memory://'", 'wasmoon-lua5.1');
    throw error;
  }
}

/** Throws the typed error a missing wasmoon-lua5.1 gets, at once rather than at the first connection. */
export function checkLuaPackage(): void {
  wasmFile();
}

/**
 * Lua 5.1 from the WebAssembly binary wasmoon-lua5.1 publishes, instantiated here with the few host
 * functions it imports, rather than through the package's JavaScript: that code loads a Node builtin
 * with a dynamic `import()`, which Jest's module sandbox refuses unless Node runs with
 * --experimental-vm-modules, and most applications' tests run there. Only Lua's C API is used, and
 * the host functions a script can reach (a Redis script has no files, clock or environment) answer as
 * a system without them would.
 */
export async function createLuaModule(): Promise<LuaModule> {
  const bytes = readFileSync(wasmFile());
  // Filled once instantiated: the host functions below are only called after.
  const wasm = {} as Exports;
  let heap8 = new Uint8Array(0);
  let heap32 = new Uint32Array(0);
  // The views are replaced when the memory grows (its buffer is then a new one).
  const views = () => {
    if (heap8.buffer !== wasm.memory.buffer) {
      heap8 = new Uint8Array(wasm.memory.buffer);
      heap32 = new Uint32Array(wasm.memory.buffer);
    }
  };
  const unavailable = (what: string) => () => {
    throw new Error(`${what} is not available in the memory engine`);
  };
  const env = {
    // setjmp/longjmp, which Lua's errors use, as Emscripten builds them: a longjmp throws through the
    // JavaScript frame of the call that set the jump (invoke_vii), which then tells the module.
    invoke_vii(index: number, a: number, b: number): void {
      const stack = wasm.stackSave();
      try {
        (wasm.__indirect_function_table.get(index) as (a: number, b: number) => void)(a, b);
      } catch (error) {
        wasm.stackRestore(stack);
        if (error !== Infinity) throw error;
        wasm.setThrew(1, 0);
      }
    },
    _emscripten_throw_longjmp(): void {
      throw Infinity;
    },
    emscripten_memcpy_js(dest: number, src: number, count: number): void {
      views();
      heap8.copyWithin(dest, src, src + count);
    },
    emscripten_resize_heap(requested: number): number {
      const memory = wasm.memory;
      const size = memory.buffer.byteLength;
      const wanted = Math.max(requested >>> 0, Math.min(size * 2, size + 96 * 1024 * 1024));
      try {
        memory.grow(Math.ceil((wanted - size) / 65536));
        return 1;
      } catch {
        return 0;
      }
    },
    emscripten_date_now: () => Date.now(),
    _emscripten_get_now_is_monotonic: () => 1,
    exit: unavailable('exit'),
    strftime: () => 0,
    _tzset_js(timezone: number, daylight: number, std: number, dst: number): void {
      views();
      heap32[timezone >> 2] = 0;
      heap32[daylight >> 2] = 0;
      heap8[std] = 0;
      heap8[dst] = 0;
    },
    _mktime_js: unavailable('os.time'),
    _localtime_js: unavailable('os.date'),
    _gmtime_js: unavailable('os.date'),
    _emscripten_system: () => -ENOSYS,
    __syscall_openat: () => -ENOSYS,
    __syscall_fcntl64: () => -ENOSYS,
    __syscall_ioctl: () => -ENOSYS,
    __syscall_dup3: () => -ENOSYS,
    __syscall_unlinkat: () => -ENOSYS,
    __syscall_rmdir: () => -ENOSYS,
    __syscall_renameat: () => -ENOSYS,
    __syscall_readlinkat: () => -ENOSYS,
  };
  const wasi = {
    // What a script prints goes to the server's log on Redis; here nowhere, reported as written.
    fd_write(_fd: number, iov: number, count: number, written: number): number {
      views();
      let total = 0;
      for (let i = 0; i < count; i++) total += heap32[(iov >> 2) + i * 2 + 1];
      heap32[written >> 2] = total;
      return 0;
    },
    fd_read: () => EBADF,
    fd_close: () => EBADF,
    fd_seek: () => EBADF,
    environ_sizes_get(count: number, size: number): number {
      views();
      heap32[count >> 2] = 0;
      heap32[size >> 2] = 0;
      return 0;
    },
    environ_get: () => 0,
  };
  const { instance } = await WebAssembly.instantiate(bytes, { env, wasi_snapshot_preview1: wasi });
  Object.assign(wasm, instance.exports);
  wasm.emscripten_stack_init?.();
  wasm.__wasm_call_ctors();
  const wrapper = new WebAssembly.Module(C_FUNCTION_WRAPPER);
  const api: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(wasm)) if (typeof value === 'function') api[`_${name}`] = value;
  // Defined, not assigned: Object.assign would read the getters once and keep views of the memory's
  // first buffer, detached as soon as a long string makes the memory grow.
  const memoryViews = {
    get HEAPU8() {
      views();
      return heap8;
    },
    get HEAPU32() {
      views();
      return heap32;
    },
    addFunction(fn: (state: number) => number): number {
      const table = wasm.__indirect_function_table;
      const made = new WebAssembly.Instance(wrapper, { e: { f: fn } });
      const index = table.grow(1);
      table.set(index, made.exports.f as (state: number) => number);
      return index;
    },
  };
  return Object.defineProperties(api, Object.getOwnPropertyDescriptors(memoryViews)) as unknown as LuaModule;
}
