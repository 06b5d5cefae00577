/** A status reply (`+OK`), told apart from a bulk string. */
export class Status {
  constructor(readonly text: string) {}
}

/** An error reply (`-ERR ...`): what a command returns instead of throwing. */
export class ErrorReply {
  constructor(readonly message: string) {}
}

/** A reply as the memory engine builds it: bulk string, integer, nil, array, status or error. */
export type Reply = string | number | null | Reply[] | Status | ErrorReply;

export const OK = new Status('OK');
export const QUEUED = new Status('QUEUED');

export const wrongType = () => new ErrorReply('WRONGTYPE Operation against a key holding the wrong kind of value');
export const notInteger = () => new ErrorReply('ERR value is not an integer or out of range');
export const notFloat = () => new ErrorReply('ERR value is not a valid float');
export const syntaxError = () => new ErrorReply('ERR syntax error');
export const wrongArity = (name: string) =>
  new ErrorReply(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
export const unknownCommand = (name: string, args: string[]) =>
  new ErrorReply(
    `ERR unknown command '${name}', with args beginning with: ${args
      .slice(0, 3)
      .map((arg) => `'${arg}' `)
      .join('')}`,
  );
export const noScript = () => new ErrorReply('NOSCRIPT No matching script. Please use EVAL.');

/** A RESP2 reply's bytes. */
export function encodeReply(reply: Reply, out: string[]): void {
  if (typeof reply === 'string') {
    out.push(`$${Buffer.byteLength(reply)}\r\n`, reply, '\r\n');
  } else if (typeof reply === 'number') {
    out.push(`:${reply}\r\n`);
  } else if (reply === null) {
    out.push('$-1\r\n');
  } else if (Array.isArray(reply)) {
    out.push(`*${reply.length}\r\n`);
    for (const item of reply) encodeReply(item, out);
  } else if (reply instanceof Status) {
    out.push(`+${reply.text}\r\n`);
  } else {
    out.push(`-${reply.message.replace(/\r?\n/g, ' ')}\r\n`);
  }
}
