// Goal: random and malformed WebSocket traffic on /v1/stream (fast-check) over raw TCP against a started
// agent — upgrade requests with odd headers, frames with any opcode, reserved bits, lengths (non-minimal
// encodings, oversize, control frames over 125 bytes), unmasked, fragmented or stray continuations,
// binary and invalid UTF-8, and messages that are bad JSON, wrong types, huge ids or unknown ops — never
// crash or hang the agent: every upgrade is answered (101 or a 4xx, never 5xx), every connection answers
// a ping sent after the junk or is closed, within a bound, and an unrelated HTTP request still answers.
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { streamSubprotocol } from '../support/stream-load.ts';

/** FUZZ_RUNS=20000 for `npm run fuzz`; fewer by default so the suite stays quick. */
const numRuns = Number(process.env.FUZZ_RUNS ?? 300);
/** How long a connection may take to answer or close after the junk: a hang past it fails the run. */
const answerMs = 10_000;

let agent: Agent;
let port = 0;

beforeAll(async () => {
  agent = await startAgent();
  port = Number(new URL(agent.url).port);
  // Something for subscriptions to show.
  for (const k of ['fuzz/a', 'fuzz/b']) await call(agent.url, 'PUT', `/v1/kv/${k}`, k);
});
afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

// ---------------------------------------------------------------- frames

interface Frame {
  fin: boolean;
  rsv: number;
  opcode: number;
  masked: boolean;
  payload: Uint8Array;
  /** Length field written in a longer form than needed (126 or 127 for a short payload). */
  longLength: 0 | 126 | 127;
}

/** One client frame on the wire (RFC 6455 §5.2), masked with a fixed key when `masked`. */
function encodeFrame(f: Frame): Buffer {
  const n = f.payload.length;
  const form = f.longLength !== 0 ? f.longLength : n < 126 ? 0 : n < 65536 ? 126 : 127;
  const head = [(f.fin ? 0x80 : 0) | ((f.rsv & 7) << 4) | (f.opcode & 15)];
  const maskBit = f.masked ? 0x80 : 0;
  if (form === 0) head.push(maskBit | n);
  else if (form === 126) head.push(maskBit | 126, (n >> 8) & 255, n & 255);
  else head.push(maskBit | 127, 0, 0, 0, 0, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255);
  const key = [0x12, 0x34, 0x56, 0x78];
  const body = Buffer.from(f.payload);
  if (f.masked) for (let i = 0; i < body.length; i++) body[i] = body[i]! ^ key[i % 4]!;
  return Buffer.concat([Buffer.from(head), ...(f.masked ? [Buffer.from(key)] : []), body]);
}

const text = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

const topics = ['service_health', 'service_checks', 'node_checks', 'checks_in_state', 'serving_status', 'kv_prefix', 'sessions'];

/** Field values of every type, mostly wrong. */
const anyField = fc.oneof(
  fc.string({ maxLength: 20 }), fc.constantFrom('', 'fuzz/', 'web', 'passing', 'any', 'node1', 'a'), fc.integer(), fc.double(),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 64, -1, 1e308, 0), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 129, max: 16_000 }).map((n) => 'i'.repeat(n)),
);

/** Well-formed subscribes and unsubscribes, some with one odd field: answered, not closed. */
const wellFormed: fc.Arbitrary<string> = fc.oneof(
  fc.record({
    op: fc.constant('subscribe'),
    id: fc.constantFrom('a', 'b', 'c', 's1'),
    topic: fc.constantFrom(...topics),
    key: fc.constantFrom('', 'fuzz/', 'web', 'passing', 'any', 'node1', 'nope'),
    index: fc.oneof(fc.constant(0), fc.nat(), anyField),
    filter: fc.record({ passingOnly: fc.boolean(), lockedOnly: fc.boolean() }, { requiredKeys: [] }),
  }, { requiredKeys: ['op', 'id', 'topic', 'key'] }),
  fc.record({ op: fc.constant('unsubscribe'), id: fc.oneof(fc.constantFrom('a', 'b', 'c'), anyField) }),
).map((m) => JSON.stringify(m));

/** Client messages: well-formed ones, plausible ones with wrong or odd fields, and junk. */
const message: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: wellFormed },
  { weight: 4, arbitrary: fc.record({
    op: fc.oneof(fc.constantFrom('subscribe', 'unsubscribe'), anyField),
    id: fc.oneof(fc.constantFrom('a', 'b', 's1'), anyField),
    topic: fc.oneof(fc.constantFrom(...topics), anyField),
    key: anyField,
    index: fc.oneof(fc.nat(), anyField),
    epoch: anyField,
    filter: fc.oneof(fc.record({ passingOnly: anyField, lockedOnly: anyField }), anyField),
  }, { requiredKeys: [] }).map((m) => JSON.stringify(m)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.constantFrom('{', '{"op":', 'null', '[]', '"subscribe"', '{"op":"subscribe"', '}{', '', ' ', '\u0000', '{"op":"subscribe","id":"x"}{}') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((d) => '['.repeat(d) + ']'.repeat(d)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
);

/** Payload bytes: messages, random bytes, invalid UTF-8, oversize. */
const payload: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: message.map(text) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }) },
  { weight: 1, arbitrary: fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x7b, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x7d], [0xe2, 0x82]).map((b) => new Uint8Array(b)) },
  { weight: 1, arbitrary: fc.integer({ min: 16 * 1024 - 8, max: 70 * 1024 }).map((n) => new Uint8Array(n).fill(0x61)) },
);

const frame: fc.Arbitrary<Frame> = fc.record({
  fin: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  rsv: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 7 }) }),
  // Text mostly; continuation, binary, close, ping, pong and the reserved opcodes too.
  opcode: fc.oneof({ weight: 8, arbitrary: fc.constant(1) }, { weight: 4, arbitrary: fc.constantFrom(0, 2, 8, 9, 10) }, { weight: 1, arbitrary: fc.constantFrom(3, 4, 5, 6, 7, 11, 12, 13, 14, 15) }),
  masked: fc.oneof({ weight: 15, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  payload,
  longLength: fc.oneof({ weight: 12, arbitrary: fc.constant(0 as const) }, { weight: 1, arbitrary: fc.constantFrom(126 as const, 127 as const) }),
});

/** One connection's traffic: frames, written in chunks cut at random places. */
const traffic = fc.record({
  frames: fc.array(frame, { minLength: 1, maxLength: 5 }),
  cuts: fc.array(fc.nat(), { maxLength: 4 }),
  subprotocol: fc.boolean(),
});

// ---------------------------------------------------------------- a raw client

interface ServerFrame { opcode: number; payload: Buffer }

/** Server frames (unmasked) parsed from the bytes after the 101 head; stops at an incomplete frame. */
function serverFrames(bytes: Buffer): ServerFrame[] {
  const out: ServerFrame[] = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    let n = bytes[at + 1]! & 127;
    let head = 2;
    if (n === 126) { if (at + 4 > bytes.length) break; n = bytes.readUInt16BE(at + 2); head = 4; }
    else if (n === 127) { if (at + 10 > bytes.length) break; n = Number(bytes.readBigUInt64BE(at + 2)); head = 10; }
    if (at + head + n > bytes.length) break;
    out.push({ opcode: bytes[at]! & 15, payload: bytes.subarray(at + head, at + head + n) });
    at += head + n;
  }
  return out;
}

interface Upgraded { socket: net.Socket; status: number; after: () => Buffer; ended: () => boolean }

/** A raw upgrade request with `headers`; resolves once the response head has arrived. */
function rawUpgrade(headers: Record<string, string>): Promise<Upgraded> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let headEnd = -1;
    let ended = false;
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no answer to the upgrade within ${answerMs} ms`)); }, answerMs);
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (headEnd >= 0) return;
      headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(buf.subarray(0, headEnd).toString('latin1'))?.[1] ?? 0);
      resolve({ socket, status, after: () => buf.subarray(headEnd + 4), ended: () => ended });
    });
    const finish = () => { ended = true; };
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', (err) => { finish(); if (headEnd < 0) { clearTimeout(timer); reject(err); } });
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.write(`GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${lines}\r\n`);
  });
}

const goodUpgrade = (subprotocol: boolean): Record<string, string> => ({
  Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13',
  ...(subprotocol ? { 'Sec-WebSocket-Protocol': streamSubprotocol } : {}),
});

/** Waits until the connection answered the probe ping (a pong with its payload) or was closed. */
async function answeredOrClosed(c: Upgraded, probe: Buffer): Promise<'pong' | 'closed'> {
  const deadline = Date.now() + answerMs;
  for (;;) {
    if (serverFrames(c.after()).some((f) => f.opcode === 10 && f.payload.equals(probe))) return 'pong';
    if (c.ended()) return 'closed';
    if (Date.now() > deadline) {
      const got = serverFrames(c.after()).map((f) => f.opcode);
      throw new Error(`neither the probe's pong nor a close within ${answerMs} ms; server frames so far: ${JSON.stringify(got)}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Bytes cut at the given offsets, for writing in separate chunks. */
function chunks(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of at) { out.push(bytes.subarray(from, c)); from = c; }
  out.push(bytes.subarray(from));
  return out.filter((b) => b.length > 0);
}

// ---------------------------------------------------------------- the properties

describe('WebSocket fuzz on /v1/stream', () => {
  test(`${numRuns} connections of random frames: each answers a ping afterwards or is closed; the agent stays up`, async () => {
    const outcomes = { pong: 0, closed: 0 };
    await fc.assert(fc.asyncProperty(traffic, async (t) => {
      const c = await rawUpgrade(goodUpgrade(t.subprotocol));
      try {
        expect(c.status).toBe(101);
        for (const part of chunks(Buffer.concat(t.frames.map(encodeFrame)), t.cuts)) {
          if (c.ended()) break;
          c.socket.write(part);
        }
        // A well-formed ping after the junk (every frame is complete): control frames may come between
        // fragments, so a server still reading answers it whatever the junk left open.
        const probe = Buffer.from('probe');
        if (!c.ended()) c.socket.write(encodeFrame({ fin: true, rsv: 0, opcode: 9, masked: true, payload: probe, longLength: 0 }));
        outcomes[await answeredOrClosed(c, probe)] += 1;
      } finally {
        c.socket.destroy();
      }
    }), { numRuns });
    console.log(`ws fuzz: ${outcomes.pong} answered the probe, ${outcomes.closed} closed`);
    expect(agent.proc.exitCode).toBeNull();
    expect((await call(agent.url, 'GET', '/v1/kv/fuzz/a')).status).toBe(200);
  }, Math.max(120_000, numRuns * 100));

  test(`${Math.ceil(numRuns / 4)} upgrade requests with odd headers are answered at once, never 5xx`, async () => {
    const header = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '13', '8', 'websocket', 'WebSocket', 'Upgrade', 'keep-alive, Upgrade',
      streamSubprotocol, `${streamSubprotocol}, other`, 'other', 'bearer.!!!', `${streamSubprotocol}, bearer.${Buffer.from('x').toString('base64url')}`,
      'dGhlIHNhbXBsZSBub25jZQ==', 'short', 'permessage-deflate', 'permessage-deflate; client_max_window_bits'));
    const names = ['Upgrade', 'Connection', 'Sec-WebSocket-Key', 'Sec-WebSocket-Version', 'Sec-WebSocket-Protocol', 'Sec-WebSocket-Extensions', 'Authorization', 'Origin'];
    const request = fc.tuple(fc.dictionary(fc.constantFrom(...names), header, { maxKeys: 3 }), fc.oneof(fc.constant(true), fc.constant(true), fc.constant(false)))
      .map(([odd, base]) => ({ ...(base ? goodUpgrade(true) : {}), ...Object.fromEntries(Object.entries(odd).map(([k, v]) => [k, v.replace(/[\r\n]/g, ' ')])) }));
    const statuses = new Map<number, number>();
    await fc.assert(fc.asyncProperty(request, async (h) => {
      const c = await rawUpgrade(h);
      c.socket.destroy();
      statuses.set(c.status, (statuses.get(c.status) ?? 0) + 1);
      expect(c.status).toBeGreaterThanOrEqual(101);
      expect(c.status).toBeLessThan(500);
    }), { numRuns: Math.ceil(numRuns / 4) });
    console.log(`upgrade fuzz statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(agent.proc.exitCode).toBeNull();
    expect((await call(agent.url, 'GET', '/v1/status/leader')).status).toBe(200);
  }, Math.max(60_000, numRuns * 50));
});
