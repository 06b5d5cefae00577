import { Duplex } from 'node:stream';
import IORedis, { type RedisOptions } from 'ioredis';
import type { MemoryPeer, MemoryRedis } from './memory-redis';
import { RespReader } from './resp-reader';

/**
 * The client's end of an in-process connection to a memory instance: a stream ioredis reads and
 * writes as it would a socket. What the client writes reaches the instance a turn of the event loop
 * later (setImmediate), so commands sent in one tick arrive together, as they would over TCP.
 */
class MemorySocket extends Duplex implements MemoryPeer {
  connecting = true;
  private readonly reader = new RespReader();
  private queued: string[][] = [];
  private scheduled = false;

  constructor(private readonly instance: MemoryRedis) {
    // Half-open is a TCP nicety: once either side ends, the connection is closed (ioredis waits for 'close').
    super({ allowHalfOpen: false });
    instance.connect(this);
    process.nextTick(() => {
      this.connecting = false;
      this.emit('connect');
    });
  }

  send(bytes: string | Buffer): void {
    if (!this.destroyed) this.push(bytes);
  }

  hangUp(): void {
    // The server's QUIT: its reply was pushed; the readable side ends, and with it the connection.
    this.instance.disconnect(this);
    this.push(null);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    try {
      this.queued.push(...this.reader.push(chunk));
    } catch (error) {
      done(error as Error);
      return;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const commands = this.queued;
        this.queued = [];
        this.instance.receive(this, commands);
      });
    }
    done();
  }

  override _final(done: (error?: Error | null) => void): void {
    this.instance.disconnect(this);
    this.push(null);
    done();
  }

  override _read(): void {
    // Replies are pushed as the instance writes them.
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.instance.disconnect(this);
    done(error);
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  setTimeout(): this {
    return this;
  }
}

/**
 * An ioredis `Connector` that opens in-process connections to one memory instance instead of TCP
 * sockets; ioredis keeps it on `duplicate()`, so a subscriber reaches the same instance.
 */
function memoryConnector(instance: MemoryRedis): NonNullable<RedisOptions['Connector']> {
  return class {
    firstError?: Error;
    private stream?: MemorySocket;

    check(): boolean {
      return true;
    }

    async connect(): Promise<MemorySocket> {
      await instance.ready();
      this.stream = new MemorySocket(instance);
      return this.stream;
    }

    disconnect(): void {
      this.stream?.end();
    }
  } as unknown as NonNullable<RedisOptions['Connector']>;
}

/** An ioredis client of a memory instance, with the options the module gives every client. */
export function memoryClient(instance: MemoryRedis, options: RedisOptions = {}): IORedis {
  return new IORedis({ ...options, Connector: memoryConnector(instance) });
}
