// Goal: /v1/stream upgrades and subscribes count against the HTTP API's rate limit, keyed as HTTP requests
// are: the verified token's subject once it verified, else the client address (no auth, failed auth). Past
// the limit an upgrade is refused 429 with Retry-After in the dialect's format, before anything opens, and a
// subscribe is refused error{rate_limited} with retryAfterSeconds (the connection stays, unsubscribe is not
// counted); a caller's upgrades, subscribes and HTTP requests share one window; another caller has its own.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority } from '../../src/auth/index.ts';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { streamSubprotocol, writeConfigFile } from '../support/stream-load.ts';

const limit = 4;
const secret = 'a-stream-rate-limit-secret-long-enough';
const tokens = new TokenAuthority({ secret });

let open: Agent;
let secured: Agent;

beforeAll(async () => {
  [open, secured] = await Promise.all([
    startAgent({ args: ['--config-file', writeConfigFile({ rate_limit: { requests: limit, period: '600s' } })] }),
    startAgent({ args: ['--config-file', writeConfigFile({ rate_limit: { requests: limit, period: '600s' }, auth: { jwt_secret: secret } })] }),
  ]);
});
afterAll(async () => {
  for (const a of [open, secured]) { await a?.stop(); a?.cleanup(); }
});

interface Outcome { status?: number; body?: any; headers?: Record<string, unknown> }

/** One upgrade attempt: `{}` when it opened (closed again at once), else the refusal's status, headers and body. */
function upgrade(agent: Agent, o: { headers?: Record<string, string>; localAddress?: string } = {}): Promise<Outcome> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, [streamSubprotocol], o);
  ws.on('error', () => { /* reported through the outcome */ });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.once('close', () => resolve({}));
      ws.close(1000);
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(body) }));
    });
    ws.once('error', reject);
  });
}

/** An open stream (from `localAddress` when given) that keeps every message it gets. */
async function openStream(agent: Agent, o: { headers?: Record<string, string>; localAddress?: string } = {}): Promise<{ ws: WebSocket; msgs: any[] }> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, [streamSubprotocol], o);
  const msgs: any[] = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
  ws.on('error', () => { /* seen as the close */ });
  await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('unexpected-response', () => rej(new Error('refused'))); });
  return { ws, msgs };
}

/** Sends `m` and waits for the answer naming `id` that `done` accepts. */
async function answer(s: { ws: WebSocket; msgs: any[] }, m: Record<string, unknown>, done: (a: any) => boolean): Promise<any> {
  const from = s.msgs.length;
  s.ws.send(JSON.stringify(m));
  for (let i = 0; i < 500; i++) {
    const got = s.msgs.slice(from).find((a) => a.id === m.id && done(a));
    if (got !== undefined) return got;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no answer to ${JSON.stringify(m)}: ${JSON.stringify(s.msgs.slice(from))}`);
}

const subscribed = (a: any) => a.type === 'end_of_snapshot' || a.type === 'error';

/** The caller's window (`limit`) is one upgrade and `limit - 1` subscribes; then subscribes are refused, unsubscribes not. */
async function expectSubscribesLimited(s: { ws: WebSocket; msgs: any[] }): Promise<void> {
  for (let i = 1; i < limit; i++) {
    const id = `s${i}`;
    expect(await answer(s, { op: 'subscribe', id, topic: 'kv_prefix', key: 'rate/' }, subscribed)).toMatchObject({ type: 'end_of_snapshot', id });
    if (i % 2 === 0) expect(await answer(s, { op: 'unsubscribe', id }, () => true)).toEqual({ type: 'unsubscribed', id });
  }
  for (let i = 0; i < 3; i++) {
    const refused = await answer(s, { op: 'subscribe', id: 'over', topic: 'kv_prefix', key: 'rate/' }, () => true);
    expect(refused).toMatchObject({ type: 'error', id: 'over', code: 'rate_limited', message: expect.stringMatching(/^rate limit exceeded: retry in \d+s$/) });
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);
  }
  expect(await answer(s, { op: 'unsubscribe', id: 's1' }, () => true)).toEqual({ type: 'unsubscribed', id: 's1' });
  expect(s.ws.readyState).toBe(WebSocket.OPEN);
}

function expectRateLimited(got: Outcome): void {
  expect(got.status).toBe(429);
  expect(Number(got.headers!['retry-after'])).toBeGreaterThan(0);
  expect(got.headers!['x-rate-limit-remaining']).toBe('0');
  expect(got.body).toMatchObject({ code: 1022 });
  expect(got.body.message).toMatch(/rate limit exceeded/);
}

describe('stream upgrades and the rate limit', () => {
  test('without auth: the address\'s first upgrades open, the next ones get 429 with Retry-After; its HTTP requests share the window; another address does not', async () => {
    for (let i = 0; i < limit; i++) expect(await upgrade(open)).toEqual({});
    for (let i = 0; i < 6; i++) expectRateLimited(await upgrade(open));
    expect((await call(open.url, 'GET', '/v1/status/leader')).status).toBe(429);
    expect(await upgrade(open, { localAddress: '127.0.0.2' })).toEqual({});
    expect(open.proc.exitCode).toBeNull();
  });

  test('with auth: failed upgrades count against the address (401, then 429); a verified token counts against itself', async () => {
    const garbage = { authorization: 'Bearer not-a-token' };
    for (let i = 1; i <= limit; i++) {
      const got = await upgrade(secured, { headers: garbage });
      expect(got).toMatchObject({ status: 401 });
      expect(got.headers!['x-rate-limit-remaining']).toBe(String(limit - i));
    }
    for (let i = 0; i < 6; i++) expectRateLimited(await upgrade(secured, { headers: garbage }));

    const token = await tokens.mint({ subject: 'reader', rules: [{ resource: 'key', prefix: '', access: 'read' }], ttlSeconds: 600 });
    const valid = { authorization: `Bearer ${token}` };
    for (let i = 0; i < limit; i++) expect(await upgrade(secured, { headers: valid })).toEqual({});
    expectRateLimited(await upgrade(secured, { headers: valid }));
    // The token's window is its own: its HTTP requests are refused too, another token's are not.
    expect((await call(secured.url, 'GET', '/v1/kv/x', undefined, valid)).status).toBe(429);
    const other = await tokens.mint({ subject: 'other', rules: [{ resource: 'key', prefix: '', access: 'read' }], ttlSeconds: 600 });
    expect(await upgrade(secured, { headers: { authorization: `Bearer ${other}` } })).toEqual({});
  });

  test('without auth: each subscribe counts against the address, past the limit error{rate_limited}; its HTTP requests share the window', async () => {
    const localAddress = '127.0.0.3';
    await expectSubscribesLimited(await openStream(open, { localAddress }));
    expect((await call(open.url, 'GET', '/v1/status/leader')).status).toBe(429);
    const other = await openStream(open, { localAddress: '127.0.0.4' });
    expect(await answer(other, { op: 'subscribe', id: 'a', topic: 'kv_prefix', key: 'rate/' }, subscribed)).toMatchObject({ type: 'end_of_snapshot' });
    other.ws.close();
  });

  test('with auth: each subscribe counts against the token\'s subject, not the address', async () => {
    const token = await tokens.mint({ subject: 'subscriber', rules: [{ resource: 'key', prefix: '', access: 'read' }], ttlSeconds: 600 });
    const headers = { authorization: `Bearer ${token}` };
    const localAddress = '127.0.0.5';
    await expectSubscribesLimited(await openStream(secured, { headers, localAddress }));
    expect((await call(secured.url, 'GET', '/v1/kv/x', undefined, headers)).status).toBe(429);
    expect(await upgrade(secured, { localAddress, headers: { authorization: 'Bearer not-a-token' } })).toMatchObject({ status: 401 });
  });
});
