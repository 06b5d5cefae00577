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

  private line(offset: number): { text: string; next: number } | undefined {
    const end = this.pending.indexOf('\r\n', offset);
    if (end < 0) return undefined;
    return { text: this.pending.toString('latin1', offset, end), next: end + 2 };
  }

  private command(offset: number): { args: string[]; next: number } | undefined {
    if (offset >= this.pending.length) return undefined;
    const header = this.line(offset);
    if (!header) return undefined;
    if (!header.text.startsWith('*')) {
      // An inline command (telnet style): words separated by spaces.
      return { args: header.text.split(' ').filter((word) => word !== ''), next: header.next };
    }
    const count = Number(header.text.slice(1));
    if (!Number.isInteger(count)) throw new Error(`Protocol error: invalid multibulk length`);
    const args: string[] = [];
    let next = header.next;
    for (let i = 0; i < count; i++) {
      const size = this.line(next);
      if (!size) return undefined;
      if (!size.text.startsWith('$')) throw new Error(`Protocol error: expected '$', got '${size.text[0]}'`);
      const length = Number(size.text.slice(1));
      const end = size.next + length;
      if (end + 2 > this.pending.length) return undefined;
      args.push(this.pending.toString('utf8', size.next, end));
      next = end + 2;
    }
    return { args, next };
  }
}
