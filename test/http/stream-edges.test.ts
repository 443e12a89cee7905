// Goal: the stream's edges against started agents with real `ws` clients — with auth on, the upgrade
// needs a token whose rules can read something a topic shows (403/1004 otherwise, nothing opened);
// client messages over the protocol's limit close with 1009, binary frames with 1003; what the native
// layer cuts before Roster sees it (a message over 64 KiB, a text frame of invalid UTF-8) ends in 1006
// and leaves the agent serving; the agent-wide connection cap answers 503 with Retry-After; a resume
// whose replay would not fit half the connection's queue budget is a reset and a snapshot.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { fillPrefix, streamSubprotocol, writeConfigFile } from '../support/stream-load.ts';

const secret = 'a-stream-edges-secret-that-is-long-enough';
const tokens = new TokenAuthority({ secret });
const mint = (rules: Rule[]) => tokens.mint({ subject: 'edge', rules, ttlSeconds: 600 });

let open: Agent;
let secured: Agent;
let small: Agent;

beforeAll(async () => {
  [open, secured, small] = await Promise.all([
    startAgent({ args: ['--config-file', writeConfigFile({ limits: { stream_max_conns: 3 } })] }),
    startAgent({ args: ['--config-file', writeConfigFile({ auth: { jwt_secret: secret } })] }),
    startAgent({ args: ['--config-file', writeConfigFile({ limits: { stream_buffered_bytes_hard: 64 * 1024 } })] }),
  ]);
});
afterAll(async () => {
  for (const a of [open, secured, small]) { await a?.stop(); a?.cleanup(); }
});

interface Outcome { status?: number; body?: any; headers?: Record<string, unknown>; ws?: WebSocket }

/** Opens a stream: the open socket, or the refusal's status, headers and body. */
function upgrade(agent: Agent, headers: Record<string, string> = {}): Promise<Outcome> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, [streamSubprotocol], { headers });
  ws.on('error', () => { /* reported through the outcome */ });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(body) }));
    });
    ws.once('error', reject);
  });
}

/** How an open socket ends after `act` (bounded: 10 s). */
function closeAfter(ws: WebSocket, act: () => void): Promise<{ code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no close within 10 s')), 10_000);
    ws.once('close', (code, reason) => { clearTimeout(timer); resolve({ code, reason: reason.toString() }); });
    act();
  });
}

describe('the upgrade needs a rule a subscription can use (auth on)', () => {
  test.each<[string, Rule[]]>([
    ['no rules', []],
    ['agent read only', [{ resource: 'agent', prefix: '', access: 'read' }]],
    ['check write and operator read', [{ resource: 'check', prefix: '', access: 'write' }, { resource: 'operator', prefix: '', access: 'read' }]],
    ['only denials', [{ resource: 'key', prefix: '', access: 'deny' }, { resource: 'service', prefix: 'web', access: 'deny' }]],
  ])('a valid token with %s is refused 403 code 1004 before the upgrade', async (_what, rules) => {
    const got = await upgrade(secured, { authorization: `Bearer ${await mint(rules)}` });
    expect(got.ws).toBeUndefined();
    expect(got).toMatchObject({ status: 403, body: { code: 1004 } });
    expect(got.body.message).toMatch(/service, node, session or key/);
  });

  test.each<[string, Rule[]]>([
    ['read on a key prefix', [{ resource: 'key', prefix: 'app/', access: 'read' }]],
    ['write on a session prefix', [{ resource: 'session', prefix: 'n', access: 'write' }]],
    ['a service read beside a longer denial', [{ resource: 'service', prefix: '', access: 'read' }, { resource: 'service', prefix: 'db', access: 'deny' }]],
  ])('a token with %s opens it', async (_what, rules) => {
    const got = await upgrade(secured, { authorization: `Bearer ${await mint(rules)}` });
    expect(got.status).toBeUndefined();
    got.ws!.close();
  });
});

describe('client messages the protocol does not take', () => {
  test('a text message over 16 KiB closes with 1009 "message too big"', async () => {
    const { ws } = await upgrade(open);
    expect(await closeAfter(ws!, () => ws!.send(JSON.stringify({ op: 'subscribe', id: 'x'.repeat(20_000), topic: 'kv_prefix', key: '' }))))
      .toEqual({ code: 1009, reason: 'message too big: at most 16384 bytes' });
  });

  test('a fragmented message over 16 KiB in total closes with 1009', async () => {
    const { ws } = await upgrade(open);
    expect((await closeAfter(ws!, () => { ws!.send('{"op":"'.padEnd(10_000, 'x'), { fin: false }); ws!.send('x'.repeat(10_000), { fin: true }); })).code).toBe(1009);
  });

  test('a binary frame closes with 1003', async () => {
    const { ws } = await upgrade(open);
    expect(await closeAfter(ws!, () => ws!.send(Buffer.from(JSON.stringify({ op: 'subscribe', id: 'b', topic: 'kv_prefix', key: '' })), { binary: true })))
      .toEqual({ code: 1003, reason: 'messages must be JSON text frames' });
  });

  test('what uWebSockets.js cuts itself (over 64 KiB, invalid UTF-8) ends in 1006 and the agent keeps serving', async () => {
    const big = await upgrade(open);
    expect((await closeAfter(big.ws!, () => big.ws!.send('x'.repeat(70_000)))).code).toBe(1006);
    const bad = await upgrade(open);
    expect((await closeAfter(bad.ws!, () => bad.ws!.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { binary: false }))).code).toBe(1006);
    expect((await call(open.url, 'GET', '/v1/status/leader')).status).toBe(200);
  });
});

describe('limits.stream_max_conns', () => {
  test('past the agent-wide cap the upgrade is refused 503 code 1016 with Retry-After', async () => {
    const held: WebSocket[] = [];
    try {
      for (let i = 0; i < 3; i++) held.push((await upgrade(open)).ws!);
      const refused = await upgrade(open);
      expect(refused).toMatchObject({ status: 503, body: { code: 1016 } });
      expect(refused.headers!['retry-after']).toBe('1');
    } finally {
      for (const ws of held) ws.close();
    }
  });
});

describe('resume within the queue budget (limits.stream_buffered_bytes_hard = 64 KiB)', () => {
  /** Subscribes `r` to kv_prefix `key` from `index`; resolves with its messages up to end_of_snapshot or resumed. */
  function resumeFrom(index: number, key: string): Promise<any[]> {
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(small.url).port}/v1/stream`, [streamSubprotocol]);
    const msgs: any[] = [];
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { ws.close(); reject(new Error(`no end within 10 s: ${JSON.stringify(msgs.map((m) => m.type))}`)); }, 10_000);
      ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 'r', topic: 'kv_prefix', key, index })));
      ws.on('message', (d) => {
        const m = JSON.parse(d.toString());
        msgs.push(m);
        const batchDone = msgs.some((x) => x.type === 'subscribed' && x.resumed) && (m.type === 'batch' || m.type === 'event');
        if (m.type === 'end_of_snapshot' || batchDone) { clearTimeout(timer); ws.close(); resolve(msgs); }
      });
      ws.on('error', reject);
    });
  }

  test('a small replay is one batch; one larger than half the budget is reset{replay_too_large} and a snapshot', async () => {
    await fillPrefix(small, 'r/', 4, 1024);
    const index = Number((await call(small.url, 'GET', '/v1/kv/r/?recurse')).headers.get('x-consul-index'));
    await fillPrefix(small, 'r/', 4, 1024, { round: 1 });
    const few = await resumeFrom(index, 'r/');
    expect(few.map((m) => m.type)).toEqual(['subscribed', 'batch']);
    expect(few[1].events).toHaveLength(4);
    // 40 values of 1 KiB (about 55 KB as JSON) after the index: more than 32 KiB to replay.
    await fillPrefix(small, 'r/', 40, 1024, { round: 2 });
    const many = await resumeFrom(index, 'r/');
    expect(many.slice(0, 2)).toMatchObject([{ type: 'subscribed', resumed: false }, { type: 'reset', reason: 'replay_too_large' }]);
    expect(many.filter((m) => m.type === 'snapshot').flatMap((m) => m.keys)).toHaveLength(40);
    expect(many.at(-1).type).toBe('end_of_snapshot');
  });
});
