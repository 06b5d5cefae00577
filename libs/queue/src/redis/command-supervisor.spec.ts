import { EventEmitter } from 'node:events';
import IORedis, { Cluster } from 'ioredis';
import { CommandHeartbeat, type SupervisedClient } from './command-heartbeat';
import { CommandSupervisor } from './command-supervisor';

/** A call as ioredis makes one: a promise a reply settles, and its rejection, which the test watches. */
function command() {
  let resolve!: (reply: unknown) => void;
  const promise = new Promise((settle) => (resolve = settle));
  return { promise, resolve, reject: jest.fn() };
}

/**
 * A connection as ioredis keeps one: its socket, its status, and `sendCommand`, through which every
 * call leaves (`written`, in order, for the test to answer). A PING is sent and never answered by itself.
 */
function fakeClient(status: string) {
  const socket = Object.assign(new EventEmitter(), { destroyed: false, destroy: () => (socket.destroyed = true) });
  const written: ReturnType<typeof command>[] = [];
  const client = Object.assign(new EventEmitter(), {
    status,
    stream: socket,
    sendCommand: (call: ReturnType<typeof command>) => {
      written.push(call);
      return call.promise;
    },
    pings: 0,
    ping: () => {
      client.pings++;
      return client.sendCommand(command());
    },
  });
  return { client, socket, written };
}

/** The heartbeats a test started, stopped after it. */
const heartbeats: CommandHeartbeat[] = [];

/** A connection whose socket, status and queue of sent calls the test drives. */
function connection(status = 'ready') {
  const { client, socket, written } = fakeClient(status);
  const stalls: { silentMs: number; waiting: number }[] = [];
  const heartbeat = new CommandHeartbeat(client as unknown as SupervisedClient, {
    error: (silentMs) => new Error(`silent for ${silentMs} ms`),
    stalled: (silentMs, waiting) => stalls.push({ silentMs, waiting }),
    deadlineMs: 3000,
    quietMs: 15_000,
  });
  heartbeats.push(heartbeat);
  const call = () => {
    const sent = command();
    void client.sendCommand(sent);
    return sent;
  };
  /** A reply arrives: the oldest call is answered. */
  const reply = () => {
    written.shift()?.resolve('OK');
    socket.emit('data');
  };
  /** The 3 s deadline of silence goes by: no stall before it, then one at most (the test checks which). */
  const passDeadline = async () => {
    await jest.advanceTimersByTimeAsync(2500);
    expect(stalls).toEqual([]);
    await jest.advanceTimersByTimeAsync(1100);
  };
  return { client, socket, heartbeat, stalls, call, reply, passDeadline };
}

describe('CommandHeartbeat', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => {
    for (const heartbeat of heartbeats.splice(0)) heartbeat.stop();
    jest.useRealTimers();
  });

  it('leaves a connection whose replies keep coming alone, however long its calls keep it busy', async () => {
    const { heartbeat, stalls, call, reply, socket, client } = connection();
    heartbeat.start();
    for (let round = 0; round < 20; round++) {
      call();
      call();
      await jest.advanceTimersByTimeAsync(1000);
      reply();
    }
    expect(stalls).toEqual([]);
    expect(socket.destroyed).toBe(false);
    expect(client.pings).toBe(0);
  });

  it('fails the calls awaiting replies and destroys the socket after the deadline of silence', async () => {
    const { heartbeat, stalls, call, socket, passDeadline } = connection();
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(5000);
    const calls = [call(), call()];
    await passDeadline();
    expect(stalls).toEqual([{ silentMs: expect.any(Number) as number, waiting: 2 }]);
    expect(stalls[0].silentMs).toBeGreaterThanOrEqual(3000);
    for (const command of calls)
      expect(command.reject).toHaveBeenCalledWith(new Error(`silent for ${stalls[0].silentMs} ms`));
    expect(socket.destroyed).toBe(true);
  });

  it('pings a connection quiet for 15 s, and replaces it when the PING goes unanswered', async () => {
    const { heartbeat, stalls, client, socket } = connection();
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(14_500);
    expect(client.pings).toBe(0);
    await jest.advanceTimersByTimeAsync(500);
    expect(client.pings).toBe(1);
    await jest.advanceTimersByTimeAsync(4000);
    expect(client.pings).toBe(1);
    expect(stalls).toEqual([{ silentMs: expect.any(Number) as number, waiting: 1 }]);
    expect(socket.destroyed).toBe(true);
  });

  it('costs one PING per quiet spell when it is answered', async () => {
    const { heartbeat, stalls, client, reply } = connection();
    heartbeat.start();
    for (let spell = 1; spell <= 4; spell++) {
      await jest.advanceTimersByTimeAsync(15_000);
      expect(client.pings).toBe(spell);
      reply();
    }
    expect(stalls).toEqual([]);
  });

  it('replaces a connection whose handshake goes unanswered, not one waiting for a loading server', async () => {
    const { heartbeat, stalls, client, socket, call, reply, passDeadline } = connection('connecting');
    heartbeat.start();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(stalls).toEqual([]);
    client.status = 'connect';
    client.emit('connect');
    // The ready check is answered "loading": ioredis asks again later, nothing is due meanwhile.
    call();
    await jest.advanceTimersByTimeAsync(500);
    reply();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(stalls).toEqual([]);
    call();
    await passDeadline();
    expect(stalls).toHaveLength(1);
    expect(socket.destroyed).toBe(true);
  });

  it('waits out the silence a WAIT announced', async () => {
    const { heartbeat, stalls, call, reply } = connection();
    heartbeat.start();
    call();
    heartbeat.allowSilence(8000);
    await jest.advanceTimersByTimeAsync(8000);
    expect(stalls).toEqual([]);
    reply();
    call();
    await jest.advanceTimersByTimeAsync(3600);
    expect(stalls).toHaveLength(1);
  });

  it('reads what arrived during a pause of the process before calling the connection silent', async () => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['setImmediate'] });
    const { heartbeat, stalls, call, reply } = connection();
    heartbeat.start();
    call();
    // The check that finds 3 s of silence runs first in the turn after a pause; the reply that came
    // meanwhile is read in that turn's I/O, before the stall is confirmed.
    jest.advanceTimersByTime(3500);
    reply();
    await new Promise((resolve) => setImmediate(resolve));
    expect(stalls).toEqual([]);
    call();
    jest.advanceTimersByTime(3500);
    await new Promise((resolve) => setImmediate(resolve));
    expect(stalls).toHaveLength(1);
  });
});

/** A node connection of a Cluster: ready, its socket open; `send` sends a call that is never answered. */
function silentNode(port: number) {
  const { client, socket } = fakeClient('ready');
  const node = Object.assign(client, { options: { host: '127.0.0.1', port } });
  const send = () => {
    const call = command();
    void node.sendCommand(call);
    return call;
  };
  return { node: node as unknown as IORedis, socket, send, emitter: node };
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
    const call = first.send();
    other.send();
    cluster.emit('-node', other.node);
    jest.advanceTimersByTime(3500);
    await settle();
    expect(first.socket.destroyed).toBe(true);
    expect(call.reject).toHaveBeenCalledWith(expect.objectContaining({ message: expect.stringMatching(/^no reply/) }));
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
      const { node, send } = silentNode(7000);
      cluster.emit('+node', node);
      send();
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
