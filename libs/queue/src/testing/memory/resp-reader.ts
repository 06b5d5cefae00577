/**
 * Reads the commands a client sends (RESP arrays of bulk strings, as ioredis writes them) from a
 * byte stream that arrives in pieces; a command cut between two pieces waits for the rest.
 */
export class RespReader {
  private pending: Buffer = Buffer.alloc(0);

  /** Adds bytes; returns every command they complete, or throws on bytes that are not RESP. */
  push(chunk: Buffer): string[][] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const commands: string[][] = [];
    let offset = 0;
    for (;;) {
      const read = this.command(offset);
      if (!read) break;
      commands.push(read.args);
      offset = read.next;
    }
    this.pending = offset === 0 ? this.pending : this.pending.subarray(offset);
    return commands;
  }

  /** Index of the `\r\n` that ends the line at `offset`; -1 when it has not arrived yet. */
  private lineEnd(offset: number): number {
    const end = this.pending.indexOf(CR, offset);
    return end < 0 || end + 1 >= this.pending.length ? -1 : end;
  }

  /** The number after a line's type byte (`*3`, `$12`), as `Number` reads it. */
  private number(offset: number, end: number): number {
    let value = 0;
    for (let i = offset + 1; i < end; i++) {
      const digit = this.pending[i] - 48;
      if (digit < 0 || digit > 9) return Number(this.pending.toString('latin1', offset + 1, end));
      value = value * 10 + digit;
    }
    return value;
  }

  private command(offset: number): { args: string[]; next: number } | undefined {
    const { pending } = this;
    if (offset >= pending.length) return undefined;
    const headerEnd = this.lineEnd(offset);
    if (headerEnd < 0) return undefined;
    if (pending[offset] !== STAR) {
      // An inline command (telnet style): words separated by spaces.
      const text = pending.toString('latin1', offset, headerEnd);
      return { args: text.split(' ').filter((word) => word !== ''), next: headerEnd + 2 };
    }
    const count = this.number(offset, headerEnd);
    if (!Number.isInteger(count)) throw new Error(`Protocol error: invalid multibulk length`);
    const args: string[] = [];
    let next = headerEnd + 2;
    for (let i = 0; i < count; i++) {
      const sizeEnd = this.lineEnd(next);
      if (sizeEnd < 0) return undefined;
      if (pending[next] !== DOLLAR)
        throw new Error(`Protocol error: expected '$', got '${String.fromCharCode(pending[next])}'`);
      const length = this.number(next, sizeEnd);
      const start = sizeEnd + 2;
      const end = start + length;
      if (end + 2 > pending.length) return undefined;
      args.push(pending.toString('utf8', start, end));
      next = end + 2;
    }
    return { args, next };
  }
}

const CR = 13;
const STAR = 42;
const DOLLAR = 36;
