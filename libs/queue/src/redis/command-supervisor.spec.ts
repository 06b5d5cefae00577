import { EventEmitter } from 'node:events';
import IORedis, { Cluster } from 'ioredis';
import { CommandSupervisor } from './command-supervisor';

/** A node connection of a Cluster: ready, its socket open, one call sent and never answered. */
function silentNode(port: number) {
  const socket = Object.assign(new EventEmitter(), { destroyed: false, destroy: () => (socket.destroyed = true) });
  const call = { reject: jest.fn() };
  const sent = [call];
  const node = Object.assign(new EventEmitter(), {
    options: { host: '127.0.0.1', port },
    status: 'ready',
    stream: socket,
    commandQueue: {
      get length() {
        return sent.length;
      },
      shift: () => {
        const command = sent.shift();
        return command && { command };
      },
    },
    ping: () => new Promise(() => undefined),
  });
  return { node: node as unknown as IORedis, socket, call, emitter: node };
}

describe('CommandSupervisor on a Cluster', () => {
  let cluster: Cluster;
  const logs = { warn: jest.fn(), log: jest.fn() };

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['setImmediate'] });
    cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    logs.warn.mockReset();
    logs.log.mockReset();
  });
  afterEach(() => {
    cluster.disconnect();
    jest.useRealTimers();
  });

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('supervises each node connection the Cluster adds, and stops with its removal', async () => {
    const supervisor = new CommandSupervisor(cluster, logs);
    supervisor.start();
    const first = silentNode(7000);
    const other = silentNode(7001);
    cluster.emit('+node', first.node);
    cluster.emit('+node', other.node);
    cluster.emit('-node', other.node);
    jest.advanceTimersByTime(3500);
    await settle();
    expect(first.socket.destroyed).toBe(true);
    expect(first.call.reject).toHaveBeenCalledWith(
      expect.objectContaining({ message: expect.stringMatching(/^no reply/) }),
    );
    expect(other.socket.destroyed).toBe(false);
    expect(supervisor.restarts).toBe(1);
    expect(logs.warn).toHaveBeenCalledWith(
      expect.stringMatching(/^Redis node 127\.0\.0\.1:7000: no reply for 3 s with 1 call/),
    );
    supervisor.stop();
  });

  it("logs a node's outage once across the connections that replace each other, and its end", async () => {
    const supervisor = new CommandSupervisor(cluster, logs);
    supervisor.start();
    for (let attempt = 0; attempt < 3; attempt++) {
      // ioredis drops a node's connection that closed, and makes a new one for the node's next call.
      const { node } = silentNode(7000);
      cluster.emit('+node', node);
      jest.advanceTimersByTime(3500);
      await settle();
      cluster.emit('-node', node);
    }
    expect(supervisor.restarts).toBe(3);
    expect(logs.warn).toHaveBeenCalledTimes(1);
    const answering = silentNode(7000);
    cluster.emit('+node', answering.node);
    answering.emitter.emit('ready');
    expect(logs.log).toHaveBeenCalledWith(
      expect.stringMatching(/^Redis node 127\.0\.0\.1:7000: answering again \(after .*, 3 reconnection\(s\)\)$/),
    );
    supervisor.stop();
  });
});
