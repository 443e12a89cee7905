// Goal: the conventions' remaining request rules through started agents — 405 naming the same methods in Allow and its
// details, 413 at the configured size, 428/1028 for a missing
// Content-Type and 415 for another type on JSON bodies (seed dialect only), the per-client cap on
// requests in flight (429), slow bodies answered 400/1015 and slow heads cut off, the stream upgrade
// authenticated (header, X-Consul-Token, `bearer.` subprotocol), subscriptions checked against the
// token's rules, 4001 when the token expires, the per-client stream cap, and KV lists filtered per key.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Agent as UndiciAgent, request } from 'undici';
import WebSocket from 'ws';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, expectError, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'a-hardening-secret-that-is-long-enough-42';
const tokens = new TokenAuthority({ secret });
const mint = (rules: Rule[], ttlSeconds = 600, subject = 'tester') => tokens.mint({ subject, rules, ttlSeconds });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const subprotocol = 'registry.stream.v1';

let open: Agent;
let secured: Agent;
let consul: Agent;

function configFile(settings: unknown): string {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

beforeAll(async () => {
  const limits = { kv_max_value_size: 1000, http_max_conns_per_client: 5, stream_max_conns_per_client: 3, request_body_timeout: '1s' };
  [open, secured, consul] = await Promise.all([
    startAgent({ args: ['--config-file', configFile({ limits })] }),
    startAgent({ args: ['--config-file', configFile({ auth: { jwt_secret: secret, clock_skew: '5s' } })] }),
    startAgent({ args: ['--dialect', 'consul'] }),
  ]);
});
afterAll(async () => {
  for (const a of [open, secured, consul]) { await a?.stop(); a?.cleanup(); }
});

describe('body media type (seed dialect)', () => {
  test('a JSON body without Content-Type is 428 code 1028, another type 415; neither changes anything', async () => {
    // A Buffer: fetch adds no Content-Type of its own (a string would go as text/plain).
    const body = Buffer.from(JSON.stringify({ Name: 'typed', TTL: '30s' }));
    const missing = expectError(await call(open.url, 'PUT', '/v1/session/create', body), 428, 1028);
    expect(missing.details).toHaveProperty('Content-Type');
    const plain = await call(open.url, 'PUT', '/v1/session/create', body, { 'content-type': 'text/plain' });
    expect(plain.headers.get('content-type')).toMatch(/^application\/json/);
    expect(expectError(plain, 415, 1019).details['Content-Type']).toEqual(['MediaType:text/plain']);
    expectError(await call(open.url, 'PUT', '/v1/session/create', body, { 'content-type': 'application/json; charset=iso-8859-1' }), 415, 1019);
    expectError(await call(open.url, 'PUT', '/v1/agent/check/register', JSON.stringify({ Name: 'c', TTL: '30s' }), { 'content-type': 'application/xml' }), 415, 1019);
    expect((await call(open.url, 'GET', '/v1/session/list')).json()).toEqual([]);
    expect((await call(open.url, 'GET', '/v1/agent/checks')).json()).toEqual({});
  });

  test('application/json with or without charset=utf-8 is accepted; a bodyless PUT needs no type', async () => {
    const a = await call(open.url, 'PUT', '/v1/session/create', '{"TTL":"30s"}', { 'content-type': 'application/json;charset=utf-8' });
    const b = await call(open.url, 'PUT', '/v1/session/create', '{"TTL":"30s"}', { 'content-type': 'Application/JSON' });
    const c = await call(open.url, 'PUT', '/v1/session/create');
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    for (const r of [a, b, c]) await call(open.url, 'PUT', `/v1/session/destroy/${r.json().ID}`);
  });

  test('KV values are opaque bytes: any Content-Type, or none, is stored as sent', async () => {
    expect((await call(open.url, 'PUT', '/v1/kv/typed/raw', Buffer.from('<x/>'))).text).toBe('true');
    expect((await call(open.url, 'PUT', '/v1/kv/typed/xml', '<y/>', { 'content-type': 'application/xml' })).text).toBe('true');
    expect((await call(open.url, 'GET', '/v1/kv/typed/xml?raw')).text).toBe('<y/>');
  });

  test('the consul dialect ignores Content-Type, as Consul does', async () => {
    const r = await call(consul.url, 'PUT', '/v1/session/create', '{"TTL":"30s"}', { 'content-type': 'text/plain' });
    expect(r.status).toBe(200);
    expect(r.json().ID).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('method not allowed', () => {
  test('a 405 names the same methods in its Allow header and its details.allowed, as OPTIONS lists them', async () => {
    const refused = await call(open.url, 'POST', '/v1/kv/methods/k', 'v');
    const allow = refused.headers.get('allow');
    expect(allow).toBe('OPTIONS,GET,PUT,DELETE');
    expect(expectError(refused, 405, 1022).details).toEqual({ allowed: allow!.split(',') });
    expect((await call(open.url, 'OPTIONS', '/v1/kv/methods/k')).headers.get('allow')).toBe(allow);
    const session = await call(open.url, 'DELETE', '/v1/session/list');
    expect(expectError(session, 405, 1022).details).toEqual({ allowed: ['OPTIONS', 'GET'] });
    expect(session.headers.get('allow')).toBe('OPTIONS,GET');
    expect((await call(consul.url, 'POST', '/v1/kv/methods/k', 'v')).headers.get('allow')).toBe(allow);
  });
});

describe('body size (limits.kv_max_value_size = 1000)', () => {
  test('a body over the configured limit is 413 code 1011 naming the limit; one at the limit is stored', async () => {
    const over = expectError(await call(open.url, 'PUT', '/v1/kv/sized/k', Buffer.alloc(1001, 'x')), 413, 1011);
    expect(over.details).toEqual({ size: 1001, max: 1000 });
    expectError(await call(open.url, 'GET', '/v1/kv/sized/k'), 404, 1006);
    expect((await call(open.url, 'PUT', '/v1/kv/sized/k', Buffer.alloc(1000, 'x'))).text).toBe('true');
  });
});

describe('requests in flight per client (limits.http_max_conns_per_client = 5)', () => {
  test('the 6th concurrent request from one address is 429 with Retry-After; a freed slot serves again', async () => {
    expect((await call(open.url, 'PUT', '/v1/kv/inflight/k', 'v')).status).toBe(200);
    const index = (await call(open.url, 'GET', '/v1/kv/inflight/k')).headers.get('x-consul-index');
    expect(index).toMatch(/^\d+$/);
    const cancel = new AbortController();
    const waiting = Array.from({ length: 5 }, () =>
      fetch(`${open.url}/v1/kv/inflight/k?index=${index}&wait=30s`, { signal: cancel.signal }).catch(() => undefined));
    // Until all five are in flight (a loaded machine may take a while to send them).
    let refused = await call(open.url, 'GET', '/v1/kv/inflight/k');
    for (let i = 0; i < 50 && refused.status !== 429; i++) {
      await sleep(100);
      refused = await call(open.url, 'GET', '/v1/kv/inflight/k');
    }
    expect(refused.status, refused.text).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(expectError(refused, 429, 1022).message).toMatch(/too many requests in flight/);
    // The cap is per address: another address is served meanwhile, and the full one still refused.
    const other = new UndiciAgent({ localAddress: '127.0.0.2' });
    const fromOther = await request(`${open.url}/v1/kv/inflight/k`, { dispatcher: other });
    expect(fromOther.statusCode, await fromOther.body.text()).toBe(200);
    await other.close();
    expect((await call(open.url, 'GET', '/v1/kv/inflight/k')).status).toBe(429);
    cancel.abort();
    await Promise.all(waiting);
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      status = (await call(open.url, 'GET', '/v1/kv/inflight/k')).status;
      if (status !== 200) await sleep(50);
    }
    expect(status).toBe(200);
  });
});

/** A raw connection: what arrived, and when it closed. */
function rawConnection(url: string): { socket: net.Socket; received: () => string; closed: Promise<number> } {
  const started = Date.now();
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  let got = '';
  socket.on('data', (d) => { got += d.toString(); });
  socket.on('error', () => { /* seen as the close */ });
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
  return { socket, received: () => got, closed };
}

describe('slow requests', () => {
  test('a body trickling in past limits.request_body_timeout is answered 400 code 1015, the connection closed, nothing stored', async () => {
    const c = rawConnection(open.url);
    c.socket.write('PUT /v1/kv/slow/body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n');
    const trickle = setInterval(() => c.socket.write('a'), 200);
    const tookMs = await c.closed;
    clearInterval(trickle);
    expect(tookMs).toBeLessThan(5_000);
    const [head, body] = c.received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body!)).toMatchObject({ code: 1015 });
    expectError(await call(open.url, 'GET', '/v1/kv/slow/body'), 404, 1006);
  });

  test('a request head trickling in is cut off (uWS drops the connection about 10 s after it opened)', async () => {
    const c = rawConnection(open.url);
    c.socket.write('GET /v1/status/leader HTTP/1.1\r\nHost: localhost\r\n');
    const trickle = setInterval(() => c.socket.write('X-Slow: 1\r\n'), 500);
    const tookMs = await c.closed;
    clearInterval(trickle);
    expect(tookMs).toBeLessThan(20_000);
    expect(c.received()).toBe('');
  }, 30_000);
});

// ---------------------------------------------------------------- the stream upgrade

interface Opened { ws: WebSocket; msgs: any[]; closed: Promise<{ code: number; reason: string }> }

/** Opens a stream; resolves with the socket, or rejects with the refusal's status and body. */
function openStream(agent: Agent, protocols: string[] = [subprotocol], headers: Record<string, string> = {}): Promise<Opened> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, protocols, { headers });
  const msgs: any[] = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, msgs, closed }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body: JSON.parse(body) })));
    });
    ws.once('error', (err) => reject(err));
  });
}

async function answer(s: Opened, id: string): Promise<any> {
  // Up to 10 s: the suite shares two cores with other agents (it once took more than 2 s under load).
  for (let i = 0; i < 500; i++) {
    const m = s.msgs.find((x) => x.id === id && (x.type === 'end_of_snapshot' || x.type === 'error'));
    if (m !== undefined) return m;
    await sleep(20);
  }
  const closed = await Promise.race([s.closed, sleep(0).then(() => undefined)]);
  throw new Error(`no answer to ${id}: ${JSON.stringify(s.msgs)}${closed ? ` (the socket closed: ${closed.code} ${closed.reason})` : ''}`);
}

describe('stream authentication', () => {
  test('no token: 401 code 1002; a bad one: 401 code 1021 with WWW-Authenticate; an expired one: 401 code 1005', async () => {
    await expect(openStream(secured)).rejects.toMatchObject({ status: 401, body: { code: 1002 } });
    const bad = await openStream(secured, [subprotocol], bearer('nope')).catch((e) => e);
    expect(bad).toMatchObject({ status: 401, body: { code: 1021 } });
    expect(bad.headers['www-authenticate']).toMatch(/^Bearer /);
    const expired = await mint([{ resource: 'service', prefix: '', access: 'read' }], -60);
    await expect(openStream(secured, [subprotocol], bearer(expired))).rejects.toMatchObject({ status: 401, body: { code: 1005 } });
  });

  test('a token in Authorization, X-Consul-Token or a bearer.<base64url> subprotocol opens it; only registry.stream.v1 is echoed', async () => {
    const token = await mint([{ resource: 'service', prefix: '', access: 'read' }, { resource: 'node', prefix: '', access: 'read' }]);
    const viaHeader = await openStream(secured, [subprotocol], bearer(token));
    const viaConsul = await openStream(secured, [subprotocol], { 'x-consul-token': token });
    const viaProtocol = await openStream(secured, [subprotocol, `bearer.${Buffer.from(token).toString('base64url')}`]);
    for (const s of [viaHeader, viaConsul, viaProtocol]) {
      expect(s.ws.protocol).toBe(subprotocol);
      s.ws.send(JSON.stringify({ op: 'subscribe', id: 'w', topic: 'service_health', key: 'web' }));
      expect((await answer(s, 'w')).type).toBe('end_of_snapshot');
      s.ws.close();
    }
    const wrong = `bearer.${Buffer.from('garbage').toString('base64url')}`;
    await expect(openStream(secured, [subprotocol, wrong])).rejects.toMatchObject({ status: 401, body: { code: 1021 } });
  });

  test('with authentication, a page of another origin opens it only with a token (which such a page cannot know)', async () => {
    const token = await mint([{ resource: 'service', prefix: '', access: 'read' }]);
    const origin = { Origin: 'https://dashboard.example' };
    const opened = await openStream(secured, [subprotocol, `bearer.${Buffer.from(token).toString('base64url')}`], origin);
    expect(opened.ws.protocol).toBe(subprotocol);
    opened.ws.close();
    await expect(openStream(secured, [subprotocol], origin)).rejects.toMatchObject({ status: 401, body: { code: 1002 } });
  });

  test('each subscription needs read on what it shows: others are refused with error "forbidden"', async () => {
    const token = await mint([
      { resource: 'service', prefix: 'web', access: 'read' },
      { resource: 'node', prefix: 'n', access: 'read' },
      { resource: 'key', prefix: 'app/', access: 'read' },
      { resource: 'key', prefix: 'app/secret/', access: 'deny' },
    ]);
    const s = await openStream(secured, [subprotocol], bearer(token));
    const ask = (id: string, topic: string, key: string) => s.ws.send(JSON.stringify({ op: 'subscribe', id, topic, key }));
    ask('svc', 'service_health', 'db');
    ask('allnodes', 'service_health', 'web'); // its instances name nodes, and the token may not read every node
    ask('node', 'node_checks', 'n1');
    ask('othernode', 'node_checks', 'm1');
    ask('kv', 'kv_prefix', 'app/public/');
    ask('kvwide', 'kv_prefix', 'app/');
    ask('sess', 'sessions', '');
    expect((await answer(s, 'kv')).type).toBe('end_of_snapshot');
    // A node's checks include its service checks: with read on some services only, the node's are refused too.
    for (const id of ['svc', 'allnodes', 'node', 'othernode', 'kvwide', 'sess']) expect(await answer(s, id)).toMatchObject({ type: 'error', code: 'forbidden' });
    s.ws.close();
    const everyService = await openStream(secured, [subprotocol], bearer(await mint([{ resource: 'service', prefix: '', access: 'read' }, { resource: 'node', prefix: 'n', access: 'read' }])));
    everyService.ws.send(JSON.stringify({ op: 'subscribe', id: 'n', topic: 'node_checks', key: 'n1' }));
    expect((await answer(everyService, 'n')).type).toBe('end_of_snapshot');
    everyService.ws.send(JSON.stringify({ op: 'subscribe', id: 'm', topic: 'node_checks', key: 'm1' }));
    expect(await answer(everyService, 'm')).toMatchObject({ type: 'error', code: 'forbidden' });
    everyService.ws.close();
    const withNodes = await openStream(secured, [subprotocol], bearer(await mint([{ resource: 'service', prefix: 'web', access: 'read' }, { resource: 'node', prefix: '', access: 'read' }])));
    withNodes.ws.send(JSON.stringify({ op: 'subscribe', id: 'ok', topic: 'service_health', key: 'web' }));
    expect((await answer(withNodes, 'ok')).type).toBe('end_of_snapshot');
    withNodes.ws.close();
  });

  test('serving_status "" (the agent itself, as gRPC\'s "") is open to every token that opened the stream; a service\'s needs read on it', async () => {
    const s = await openStream(secured, [subprotocol], bearer(await mint([{ resource: 'service', prefix: 'web', access: 'read' }])));
    for (const [id, key] of [['self', ''], ['web', 'web'], ['db', 'db']]) s.ws.send(JSON.stringify({ op: 'subscribe', id, topic: 'serving_status', key }));
    expect(await answer(s, 'self')).toMatchObject({ type: 'end_of_snapshot' });
    expect(s.msgs.find((m) => m.id === 'self' && m.type === 'snapshot')).toMatchObject({ keys: [''], items: [{ status: 'SERVING' }] });
    expect(await answer(s, 'web')).toMatchObject({ type: 'end_of_snapshot' });
    expect(await answer(s, 'db')).toMatchObject({ type: 'error', code: 'forbidden', message: 'permission denied: read on serving_status "db"' });
    s.ws.close();
  });

  test('the stream is closed with 4001 "token expired" when its token expires', async () => {
    // Issued 2 s in the past with the 5 s clock skew this agent allows: valid for at most three more seconds (one
    // was too short to open the stream on a loaded machine).
    const token = await mint([{ resource: 'service', prefix: '', access: 'read' }], -2);
    const s = await openStream(secured, [subprotocol], bearer(token));
    const closed = await Promise.race([s.closed, sleep(8_000).then(() => undefined)]);
    expect(closed).toEqual({ code: 4001, reason: 'token expired' });
  });
});

describe('stream connections per client (limits.stream_max_conns_per_client = 3)', () => {
  test('a 4th stream from one address is refused 429 code 1022; closing one makes room', async () => {
    const streams = [await openStream(open), await openStream(open), await openStream(open)];
    const refused = await openStream(open).catch((e) => e);
    expect(refused).toMatchObject({ status: 429, body: { code: 1022 } });
    expect(refused.headers['retry-after']).toBe('1');
    streams[0]!.ws.close();
    await streams[0]!.closed;
    let again: Opened | undefined;
    for (let i = 0; i < 40 && again === undefined; i++) {
      again = await openStream(open).catch(() => undefined);
      if (again === undefined) await sleep(50);
    }
    expect(again).toBeDefined();
    for (const s of [...streams.slice(1), again!]) s.ws.close();
  });
});

describe('KV lists under ACL rules', () => {
  test('recurse and keys lists hold only the keys the token may read; nothing readable is 404', async () => {
    const admin = await mint([{ resource: 'key', prefix: '', access: 'write' }], 600, 'admin');
    for (const k of ['app/a', 'app/b', 'app/secret/x', 'other/z']) {
      expect((await call(secured.url, 'PUT', `/v1/kv/${k}`, k, bearer(admin))).text).toBe('true');
    }
    const reader = await mint([
      { resource: 'key', prefix: 'app/', access: 'read' },
      { resource: 'key', prefix: 'app/secret/', access: 'deny' },
    ]);
    const listed = await call(secured.url, 'GET', '/v1/kv/app/?recurse', undefined, bearer(reader));
    expect(listed.json().map((e: { Key: string }) => e.Key)).toEqual(['app/a', 'app/b']);
    const everything = await call(secured.url, 'GET', '/v1/kv/?recurse', undefined, bearer(reader));
    expect(everything.json().map((e: { Key: string }) => e.Key)).toEqual(['app/a', 'app/b']);
    const keys = await call(secured.url, 'GET', '/v1/kv/app/?keys&separator=/', undefined, bearer(reader));
    expect(keys.json()).toEqual(['app/a', 'app/b']);
    expectError(await call(secured.url, 'GET', '/v1/kv/app/secret/?recurse', undefined, bearer(reader)), 404, 1006);
    expectError(await call(secured.url, 'GET', '/v1/kv/app/secret/x', undefined, bearer(reader)), 403, 1004);
    // A prefix no rule of the reader's opens (not walked): nothing listed, an index that tells nothing of its writes.
    const written = Number((await call(secured.url, 'PUT', '/v1/kv/other/z', 'again', bearer(admin))).headers.get('x-consul-index'));
    for (const q of ['?recurse', '?keys']) {
      const none = await call(secured.url, 'GET', `/v1/kv/other/${q}`, undefined, bearer(reader));
      expectError(none, 404, 1006);
      expect(Number(none.headers.get('x-consul-index'))).toBeLessThan(written);
    }
  });

  test('a recursive delete needs write on the whole subtree: a denied key below refuses it and nothing is deleted', async () => {
    const admin = await mint([{ resource: 'key', prefix: '', access: 'write' }], 600, 'admin');
    for (const k of ['tree/a', 'tree/locked/b']) await call(secured.url, 'PUT', `/v1/kv/${k}`, 'v', bearer(admin));
    const writer = await mint([
      { resource: 'key', prefix: 'tree/', access: 'write' },
      { resource: 'key', prefix: 'tree/locked/', access: 'read' },
    ]);
    expectError(await call(secured.url, 'DELETE', '/v1/kv/tree/?recurse', undefined, bearer(writer)), 403, 1004);
    const left = await call(secured.url, 'GET', '/v1/kv/tree/?keys', undefined, bearer(admin));
    expect(left.json()).toEqual(['tree/a', 'tree/locked/b']);
    expect((await call(secured.url, 'DELETE', '/v1/kv/tree/a', undefined, bearer(writer))).status).toBe(200);
    expect((await call(secured.url, 'DELETE', '/v1/kv/tree/?recurse', undefined, bearer(admin))).status).toBe(200);
  });
});
