// Goal: what waits for a stream connection that does not read costs the agent work per message, not per
// message times what already waits. A client that never reads and sends subscribe/unsubscribe pairs in a
// burst (each answer then waits for its socket) gets 4008 once its queue passes the budget, and the agent
// answers HTTP meanwhile, with the default budget and with one raised to 8 MiB (where dropping a
// subscription's queued snapshot once rebuilt the whole queue through a spread of its items, past V8's
// argument limit: an uncaught RangeError). And dropping a subscription drops only its own queued snapshot
// and held events: the other subscriptions' arrive whole once the reader reads again.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { fillPrefix, writeConfigFile } from '../support/stream-load.ts';
import { kvPut, query, Stream, subscribe, subprotocol } from '../support/stream.ts';

let plain: Agent;
let raised: Agent;

beforeAll(async () => {
  [plain, raised] = await Promise.all([
    startAgent(),
    startAgent({ args: ['--config-file', writeConfigFile({ limits: { stream_buffered_bytes_hard: 8 * 1024 * 1024 } })] }),
  ]);
}, 60_000);
afterAll(async () => {
  for (const a of [plain, raised]) { await a?.stop(); a?.cleanup(); }
});

/** One client-to-server text frame (masked, as RFC 6455 asks of clients). */
function frame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  const head = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return Buffer.concat([head, mask, payload]);
}

/** The close frame's code and reason among the server's frames, if it came. */
function closeOf(data: Buffer): { code: number; reason: string } | undefined {
  for (let at = 0; at + 2 <= data.length;) {
    const opcode = data[at]! & 0x0f;
    let length = data[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) { length = data.readUInt16BE(start); start += 2; }
    else if (length === 127) { length = Number(data.readBigUInt64BE(start)); start += 8; }
    if (start + length > data.length) return undefined;
    if (opcode === 8) return { code: data.readUInt16BE(start), reason: data.subarray(start + 2, start + length).toString() };
    at = start + length;
  }
  return undefined;
}

/** A raw stream connection past its upgrade, not reading (paused) until `readAll`. */
async function stalledSocket(agent: Agent): Promise<{ socket: net.Socket; readAll(waitMs: number): Promise<Buffer> }> {
  const socket = net.connect(Number(new URL(agent.url).port), '127.0.0.1');
  socket.on('error', () => { /* seen as the end of the data */ });
  await new Promise<void>((res) => socket.once('connect', () => res()));
  socket.write('GET /v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
    + `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${subprotocol}\r\n\r\n`);
  const head = await new Promise<Buffer>((res) => socket.once('data', res));
  expect(head.toString().split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
  socket.pause();
  return {
    socket,
    readAll: async (waitMs) => {
      const chunks: Buffer[] = [head.subarray(head.indexOf('\r\n\r\n') + 4)];
      let ended = false;
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.on('close', () => { ended = true; });
      socket.resume();
      for (let waited = 0; !ended && waited < waitMs; waited += 50) await sleep(50);
      return Buffer.concat(chunks);
    },
  };
}

/** The roster_stream_connections gauge. */
async function streamConnections(agent: Agent): Promise<number> {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus', undefined, {}, AbortSignal.timeout(15_000))).text;
  const m = /^roster_stream_connections (\d+)/m.exec(text);
  if (m === null) throw new Error(`no roster_stream_connections in ${text.slice(0, 200)}`);
  return Number(m[1]);
}

/** `pairs` subscribe/unsubscribe pairs of the cheapest topic, sent at once; HTTP is asked at once too. */
async function burst(agent: Agent, pairs: number): Promise<void> {
  const conn = await stalledSocket(agent);
  const pair = Buffer.concat([
    frame(JSON.stringify({ op: 'subscribe', id: 'a', topic: 'serving_status', key: '' })),
    frame(JSON.stringify({ op: 'unsubscribe', id: 'a' })),
  ]);
  const written = new Promise<void>((res) => conn.socket.write(Buffer.concat(Array.from({ length: pairs }, () => pair)), () => res()));
  // The agent reads the burst as it comes: HTTP is served in between (bounded: well past what it takes).
  const during = await call(agent.url, 'GET', '/v1/status/leader', undefined, {}, AbortSignal.timeout(15_000));
  expect(during.status).toBe(200);
  // Read only once the agent has closed the connection (its gauge drops at once; the close frame waits
  // behind what is queued): read before, and the answers would flow out as fast as they are made.
  await written;
  for (let polls = 0; await streamConnections(agent) > 0; polls++) {
    if (polls > 300) throw new Error('the connection is still open after the burst');
    await sleep(100);
  }
  const data = await conn.readAll(30_000);
  conn.socket.destroy();
  expect(closeOf(data)).toEqual({ code: 4008, reason: 'slow consumer' });
  expect(agent.proc.exitCode).toBeNull();
  expect((await call(agent.url, 'GET', '/v1/status/leader')).status).toBe(200);
}

describe('a reader that never reads, sending subscribe/unsubscribe pairs', () => {
  test('100,000 pairs with the default budget: closed 4008, HTTP served meanwhile', async () => {
    await burst(plain, 100_000);
  }, 90_000);

  test('160,000 pairs with stream_buffered_bytes_hard 8 MiB: closed 4008, the agent lives and serves', async () => {
    await burst(raised, 160_000);
  }, 90_000);
});

describe('dropping a subscription drops what waits of it only', () => {
  test('its queued snapshot is skipped; the next subscription\'s snapshot arrives whole after it', async () => {
    await fillPrefix(plain, 'drop/big/', 100, 64 * 1024);
    await kvPut(client(plain), 'drop/small/x', 'x');
    const s = await Stream.open(plain);
    const socket = (s.ws as unknown as { _socket: net.Socket })._socket;
    socket.pause();
    s.send({ op: 'subscribe', id: 'big', topic: 'kv_prefix', key: 'drop/big/' });
    s.send({ op: 'subscribe', id: 'small', topic: 'kv_prefix', key: 'drop/small/' });
    s.send({ op: 'unsubscribe', id: 'big' });
    await sleep(300);
    socket.resume();
    await s.next(0, (m) => m.type === 'unsubscribed', 'unsubscribed', 15_000);
    const types = (id: string) => s.since(0, id).map((m) => m.type);
    expect(types('big')[0]).toBe('subscribed');
    expect(types('big')).not.toContain('end_of_snapshot');
    expect(s.since(0, 'big').filter((m) => m.type === 'snapshot').every((m) => m.more === true)).toBe(true);
    expect(types('big').at(-1)).toBe('unsubscribed');
    expect(types('small')).toEqual(['subscribed', 'snapshot', 'end_of_snapshot']);
    expect(s.since(0, 'small')[1]!.items).toEqual((await query(client(plain), '/v1/kv/drop/small/?recurse')).body);
    s.end();
  }, 60_000);

  test('its held events go; another subscription\'s held events arrive as one batch', async () => {
    await fillPrefix(plain, 'held/big/', 100, 64 * 1024);
    const s = await Stream.open(plain);
    await subscribe(s, { id: 'x', topic: 'kv_prefix', key: 'held/x/' });
    await subscribe(s, { id: 'y', topic: 'kv_prefix', key: 'held/y/' });
    const socket = (s.ws as unknown as { _socket: net.Socket })._socket;
    socket.pause();
    // A snapshot larger than the socket takes keeps the connection's queue busy: later events are held.
    s.send({ op: 'subscribe', id: 'z', topic: 'kv_prefix', key: 'held/big/' });
    await sleep(300);
    for (let i = 0; i < 5; i++) {
      await call(plain.url, 'PUT', `/v1/kv/held/x/${i}`, `x${i}`);
      await call(plain.url, 'PUT', `/v1/kv/held/y/${i}`, `y${i}`);
    }
    const from = s.mark;
    s.send({ op: 'unsubscribe', id: 'x' });
    await sleep(300);
    socket.resume();
    const batch = await s.next(from, (m) => m.id === 'y' && m.type === 'batch', 'the batch of y', 15_000);
    expect(batch.events.map((e: { key: string }) => e.key)).toEqual([0, 1, 2, 3, 4].map((i) => `held/y/${i}`));
    expect(s.since(0, 'x').filter((m) => m.type === 'event' || m.type === 'batch')).toEqual([]);
    expect(s.since(0, 'x').at(-1)).toEqual({ type: 'unsubscribed', id: 'x' });
    expect(s.closeInfo).toBeUndefined();
    s.end();
  }, 60_000);
});
