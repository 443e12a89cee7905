// Goal: the WebSocket stream on /v1/stream (watch.md §4) against a started agent with real `ws` clients: the upgrade and subprotocol, every topic's snapshot and live events in exactly the HTTP shape and index, list-then-watch and resume/reset, session invalidations as one batch, slow consumers closed with 4008, bookmarks, errors, close codes, and serving_status.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { client, sleep, startAgent, type Agent, type HttpResult } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
type Msg = Record<string, any> & { type: string };

const subprotocol = 'registry.stream.v1';
/** TTL checks that never lapse while the file runs: every status is set by the test. */
const ttl = '10m';
/** How long "nothing more arrives" is watched for. */
const quietMs = 300;
/** Bound of every wait for a message or a close. */
const waitMs = 5_000;
const maxFlags = '18446744073709551615';
const bigFlags = '3304740253564472344';

// ---------------------------------------------------------------- a stream client

function streamUrl(agent: { url: string }): string {
  return `ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`;
}

/** Every stream opened by a test, terminated after it. */
const opened = new Set<Stream>();

/** One `ws` connection that keeps every message (parsed and raw) and how it closed. */
class Stream {
  readonly msgs: Msg[] = [];
  readonly raw: string[] = [];
  closeInfo: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const text = data.toString();
      this.raw.push(text);
      this.msgs.push(JSON.parse(text) as Msg);
    });
    ws.on('close', (code, reason) => { this.closeInfo = { code, reason: reason.toString() }; });
    ws.on('error', () => { /* seen as a close */ });
  }

  /** `protocols` [] offers no subprotocol at all. */
  static async open(agent: { url: string }, protocols: string[] = [subprotocol]): Promise<Stream> {
    const ws = new WebSocket(streamUrl(agent), protocols);
    const s = new Stream(ws);
    opened.add(s);
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
      ws.once('unexpected-response', (_req, r) => rej(new Error(`upgrade refused: ${r.statusCode}`)));
    });
    return s;
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  get mark(): number {
    return this.msgs.length;
  }

  /** Messages from position `from` on, of subscription `id` when given (bookmarks carry no id). */
  since(from: number, id?: string): Msg[] {
    return this.msgs.slice(from).filter((m) => id === undefined || m.id === id);
  }

  /** The first message from `from` on that matches. */
  async next(from: number, match: (m: Msg) => boolean, what: string, timeoutMs = waitMs): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.msgs.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.closeInfo !== undefined) throw new Error(`closed (${this.closeInfo.code} ${this.closeInfo.reason}) while waiting for ${what}; got ${this.describe(from)}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms; got ${this.describe(from)}`);
      await sleep(10);
    }
  }

  /** Waits for the connection to close; undefined if it is still open after the bound. */
  async closed(timeoutMs = waitMs): Promise<{ code: number; reason: string } | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.closeInfo === undefined && Date.now() < deadline) await sleep(10);
    return this.closeInfo;
  }

  describe(from = 0): string {
    return JSON.stringify(this.msgs.slice(from).map((m) => ({ type: m.type, id: m.id, index: m.index, code: m.code, reason: m.reason }))).slice(0, 2000);
  }

  end(): void {
    opened.delete(this);
    this.ws.terminate();
  }
}

interface Subscribed {
  subscribed: Msg;
  reset: Msg | undefined;
  /** Parsed snapshot items in order (all frames). */
  items: any[];
  keys: string[];
  end: Msg | undefined;
  /** Every message of the subscription so far. */
  msgs: Msg[];
}

/** Sends a subscribe and waits for its snapshot to end (or for `resumed: true`, or an error). */
async function subscribe(s: Stream, req: Record<string, unknown>): Promise<Subscribed> {
  const from = s.mark;
  const id = req.id as string;
  s.send({ op: 'subscribe', ...req });
  const last = await s.next(from, (m) => m.id === id && (m.type === 'end_of_snapshot' || m.type === 'error' || (m.type === 'subscribed' && m.resumed === true)), `the answer to subscribe ${id}`);
  if (last.type === 'error') throw new Error(`subscribe ${id} refused: ${JSON.stringify(last)}`);
  const msgs = s.since(from, id);
  const snapshots = msgs.filter((m) => m.type === 'snapshot');
  return {
    subscribed: msgs.find((m) => m.type === 'subscribed')!,
    reset: msgs.find((m) => m.type === 'reset'),
    items: snapshots.flatMap((m) => m.items),
    keys: snapshots.flatMap((m) => m.keys),
    end: msgs.find((m) => m.type === 'end_of_snapshot'),
    msgs,
  };
}

/** Sends a subscribe that must be refused and returns the error. */
async function refused(s: Stream, req: Record<string, unknown>): Promise<Msg> {
  const from = s.mark;
  s.send({ op: 'subscribe', ...req });
  return s.next(from, (m) => m.id === req.id && m.type !== 'bookmark', `the answer to subscribe ${String(req.id)}`);
}

/** Messages of `id` from `from` on once nothing more has arrived for a while. */
async function settled(s: Stream, from: number, id: string): Promise<Msg[]> {
  let n = -1;
  for (let i = 0; i < 20 && n !== s.since(from, id).length; i++) {
    n = s.since(from, id).length;
    await sleep(quietMs);
  }
  return s.since(from, id);
}

// ---------------------------------------------------------------- HTTP helpers

function ok(r: HttpResult, what: string): HttpResult {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r;
}

/** A query GET: its parsed body and X-Consul-Index. */
async function query(c: Client, path: string): Promise<{ body: any; index: number; text: string }> {
  const r = ok(await c.get(path), `GET ${path}`);
  return { body: r.json(), index: Number(r.headers.get('x-consul-index')), text: r.text };
}

async function registerService(c: Client, name: string, id: string, status = 'passing'): Promise<void> {
  ok(await c.put('/v1/agent/service/register', { Name: name, ID: id, Port: 8080, Check: { TTL: ttl, Status: status } }), `register ${id}`);
}

async function setCheck(c: Client, checkId: string, verb: 'pass' | 'warn' | 'fail', note?: string): Promise<void> {
  const q = note === undefined ? '' : `?note=${encodeURIComponent(note)}`;
  ok(await c.put(`/v1/agent/check/${verb}/${encodeURIComponent(checkId)}${q}`), `${verb} ${checkId}`);
}

async function kvPut(c: Client, key: string, value: string, query = ''): Promise<void> {
  const r = ok(await c.put(`/v1/kv/${key}${query}`, value), `PUT ${key}`);
  if (r.text.trim() !== 'true') throw new Error(`PUT ${key}${query}: ${r.text}`);
}

/** `n` writes through a pool of `connections`, each producing one change (distinct values). */
async function bulkWrites(agent: Agent, n: number, connections: number, write: (i: number) => { path: string; body: string | Buffer }): Promise<void> {
  const pool = new Pool(agent.url, { connections });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: connections }, async () => {
      while (next < n) {
        const w = write(next++);
        const r = await pool.request({ method: 'PUT', path: w.path, body: w.body });
        const text = await r.body.text();
        if (r.statusCode !== 200) throw new Error(`PUT ${w.path}: ${r.statusCode} ${text}`);
      }
    }));
  } finally {
    await pool.close();
  }
}

const checkKey = (c: { Node: string; CheckID: string }) => `${c.Node}/${c.CheckID}`;

// ---------------------------------------------------------------- the suite

let agent: Agent;
let c: Client;
let configDir: string;

beforeAll(async () => {
  configDir = mkdtempSync(join(tmpdir(), 'roster-stream-'));
  const configFile = join(configDir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ stream_bookmark_interval: '1s' }));
  agent = await startAgent({ args: ['--config-file', configFile] });
  c = client(agent);
});

afterAll(async () => {
  for (const s of [...opened]) s.end();
  await agent?.stop();
  agent?.cleanup();
  rmSync(configDir, { recursive: true, force: true });
});

afterEach(() => {
  for (const s of [...opened]) s.end();
});

describe('upgrade (§4.1)', () => {
  test('registry.stream.v1 is echoed; no subprotocol is accepted too', async () => {
    const s = await Stream.open(agent);
    expect(s.ws.protocol).toBe(subprotocol);
    const bare = await Stream.open(agent, []);
    expect(bare.ws.protocol).toBe('');
    const sub = await subscribe(bare, { id: 'a', topic: 'kv_prefix', key: 'upgrade/' });
    expect(sub.end).toBeDefined();
  });

  test('a client offering only another subprotocol gets HTTP 400', async () => {
    const ws = new WebSocket(streamUrl(agent), ['other.v1']);
    const answer = await new Promise<{ status: number; body: string }>((res, rej) => {
      ws.once('open', () => rej(new Error('upgraded')));
      ws.once('error', rej);
      ws.once('unexpected-response', (req, r) => {
        let body = '';
        r.on('data', (d: Buffer) => { body += d.toString(); });
        r.on('end', () => { req.destroy(); res({ status: r.statusCode ?? 0, body }); });
      });
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ code: expect.any(Number), message: expect.any(String) });
  });
});

describe('topics: snapshot equals the HTTP query, events carry the index and the HTTP shape (§4.3)', () => {
  test('service_health (and passingOnly) mirrors /v1/health/service/{name}', async () => {
    await registerService(c, 'sh-web', 'sh-web-1');
    await registerService(c, 'sh-web', 'sh-web-2');
    const s = await Stream.open(agent);
    const all = await subscribe(s, { id: 'all', topic: 'service_health', key: 'sh-web' });
    const passing = await subscribe(s, { id: 'p', topic: 'service_health', key: 'sh-web', filter: { passingOnly: true } });
    const http = await query(c, '/v1/health/service/sh-web');
    expect(http.body).toHaveLength(2);
    expect(all.items).toEqual(http.body);
    expect(all.keys).toEqual(http.body.map((e: any) => `${e.Node.Node}/${e.Service.ID}`));
    expect(all.subscribed).toMatchObject({ resumed: false, epoch: expect.any(String) });
    expect(all.end!.index).toBe(all.subscribed.index);
    expect(passing.items).toEqual((await query(c, '/v1/health/service/sh-web?passing')).body);

    const from = s.mark;
    await setCheck(c, 'service:sh-web-1', 'fail', 'down');
    const ev = await s.next(from, (m) => m.id === 'all' && m.type === 'event', 'the service_health event');
    const del = await s.next(from, (m) => m.id === 'p' && m.type === 'event', 'the passingOnly event');
    const after = await query(c, '/v1/health/service/sh-web');
    expect(ev).toEqual({ type: 'event', id: 'all', index: after.index, op: 'upsert', key: 'node1/sh-web-1', value: after.body.find((e: any) => e.Service.ID === 'sh-web-1') });
    expect(ev.value.Checks.find((x: any) => x.CheckID === 'service:sh-web-1')).toMatchObject({ Status: 'critical', Output: 'down' });
    expect(del).toEqual({ type: 'event', id: 'p', index: after.index, op: 'delete', key: 'node1/sh-web-1' });

    const from2 = s.mark;
    await setCheck(c, 'service:sh-web-1', 'pass');
    const back = await s.next(from2, (m) => m.id === 'p' && m.type === 'event', 'the passingOnly upsert');
    const now = await query(c, '/v1/health/service/sh-web?passing');
    expect(back).toEqual({ type: 'event', id: 'p', index: now.index, op: 'upsert', key: 'node1/sh-web-1', value: now.body.find((e: any) => e.Service.ID === 'sh-web-1') });
    expect(await settled(s, from, 'all')).toHaveLength(2); // one event per change, nothing for sh-web-2
  });

  test('service_checks mirrors /v1/health/checks/{name}', async () => {
    await registerService(c, 'sc-api', 'sc-api-1');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'sc', topic: 'service_checks', key: 'sc-api' });
    const http = await query(c, '/v1/health/checks/sc-api');
    expect(sub.items).toEqual(http.body);
    expect(sub.keys).toEqual(http.body.map(checkKey));

    const from = s.mark;
    await setCheck(c, 'service:sc-api-1', 'warn', 'slow');
    const ev = await s.next(from, (m) => m.id === 'sc' && m.type === 'event', 'the service_checks event');
    const after = await query(c, '/v1/health/checks/sc-api');
    expect(ev).toEqual({ type: 'event', id: 'sc', index: after.index, op: 'upsert', key: 'node1/service:sc-api-1', value: after.body[0] });
    expect(ev.value).toMatchObject({ Status: 'warning', Output: 'slow' });

    const from2 = s.mark;
    ok(await c.put('/v1/agent/service/deregister/sc-api-1'), 'deregister');
    const gone = await s.next(from2, (m) => m.id === 'sc' && m.type === 'event', 'the delete');
    expect(gone).toEqual({ type: 'event', id: 'sc', index: (await query(c, '/v1/health/checks/sc-api')).index, op: 'delete', key: 'node1/service:sc-api-1' });
  });

  test('node_checks mirrors /v1/health/node/{node}', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'n', topic: 'node_checks', key: 'node1' });
    const http = await query(c, '/v1/health/node/node1');
    expect(sub.items).toEqual(http.body);
    expect(sub.keys).toEqual(http.body.map(checkKey));

    const from = s.mark;
    ok(await c.put('/v1/agent/check/register', { Name: 'nc-disk', TTL: ttl, Status: 'passing' }), 'register nc-disk');
    const ev = await s.next(from, (m) => m.id === 'n' && m.type === 'event', 'the node_checks event');
    const after = await query(c, '/v1/health/node/node1');
    expect(ev).toEqual({ type: 'event', id: 'n', index: after.index, op: 'upsert', key: 'node1/nc-disk', value: after.body.find((x: any) => x.CheckID === 'nc-disk') });

    const from2 = s.mark;
    ok(await c.put('/v1/agent/check/deregister/nc-disk'), 'deregister nc-disk');
    const gone = await s.next(from2, (m) => m.id === 'n' && m.type === 'event', 'the delete');
    expect(gone).toEqual({ type: 'event', id: 'n', index: (await query(c, '/v1/health/node/node1')).index, op: 'delete', key: 'node1/nc-disk' });
  });

  test('checks_in_state mirrors /v1/health/state/{state}; a check leaving the state is a delete', async () => {
    await registerService(c, 'cs-svc', 'cs-svc-1');
    const s = await Stream.open(agent);
    const passing = await subscribe(s, { id: 'pass', topic: 'checks_in_state', key: 'passing' });
    const critical = await subscribe(s, { id: 'crit', topic: 'checks_in_state', key: 'critical' });
    const any = await subscribe(s, { id: 'any', topic: 'checks_in_state', key: 'any' });
    expect(passing.items).toEqual((await query(c, '/v1/health/state/passing')).body);
    expect(critical.items).toEqual((await query(c, '/v1/health/state/critical')).body);
    expect(any.items).toEqual((await query(c, '/v1/health/state/any')).body);
    expect(passing.keys).toContain('node1/service:cs-svc-1');

    const from = s.mark;
    await setCheck(c, 'service:cs-svc-1', 'fail');
    const left = await s.next(from, (m) => m.id === 'pass' && m.type === 'event', 'the passing delete');
    const entered = await s.next(from, (m) => m.id === 'crit' && m.type === 'event', 'the critical upsert');
    const changed = await s.next(from, (m) => m.id === 'any' && m.type === 'event', 'the any upsert');
    const crit = await query(c, '/v1/health/state/critical');
    const record = crit.body.find((x: any) => x.CheckID === 'service:cs-svc-1');
    expect(left).toEqual({ type: 'event', id: 'pass', index: crit.index, op: 'delete', key: 'node1/service:cs-svc-1' });
    expect(entered).toEqual({ type: 'event', id: 'crit', index: crit.index, op: 'upsert', key: 'node1/service:cs-svc-1', value: record });
    expect(changed).toEqual({ type: 'event', id: 'any', index: crit.index, op: 'upsert', key: 'node1/service:cs-svc-1', value: record });
  });

  test('kv_prefix mirrors /v1/kv/{prefix}?recurse, Flags digits exact', async () => {
    await kvPut(c, 'kvp/a', 'one', `?flags=${maxFlags}`);
    await kvPut(c, 'kvp/b', 'two');
    await kvPut(c, 'kvpx', 'prefix is a string prefix');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'k', topic: 'kv_prefix', key: 'kvp/' });
    const http = await query(c, '/v1/kv/kvp/?recurse');
    expect(sub.items).toEqual(http.body);
    expect(sub.keys).toEqual(['kvp/a', 'kvp/b']);
    expect(s.raw.find((t) => t.includes('"type":"snapshot"') && t.includes('"kvp/a"'))).toContain(`"Flags":${maxFlags}`);

    const from = s.mark;
    await kvPut(c, 'other/not-in-prefix', 'x');
    await kvPut(c, 'kvp/c', 'three', `?flags=${bigFlags}`);
    const ev = await s.next(from, (m) => m.id === 'k' && m.type === 'event', 'the kv event');
    const after = await query(c, '/v1/kv/kvp/?recurse');
    expect(ev).toEqual({ type: 'event', id: 'k', index: after.index, op: 'upsert', key: 'kvp/c', value: after.body.find((e: any) => e.Key === 'kvp/c') });
    expect(ev.index).toBe((await query(c, '/v1/kv/kvp/c')).index);
    expect(s.raw.find((t) => t.includes('"type":"event"') && t.includes('"kvp/c"'))).toContain(`"Flags":${bigFlags}`);

    const from2 = s.mark;
    ok(await c.del('/v1/kv/kvp/a'), 'delete kvp/a');
    const gone = await s.next(from2, (m) => m.id === 'k' && m.type === 'event', 'the kv delete');
    expect(gone).toEqual({ type: 'event', id: 'k', index: (await query(c, '/v1/kv/kvp/?recurse')).index, op: 'delete', key: 'kvp/a' });
    expect(await settled(s, from, 'k')).toHaveLength(2); // nothing for other/ or for kvpx
  });

  test('sessions sees create (upsert) and destroy (delete) in the /v1/session shape', async () => {
    const s = await Stream.open(agent);
    const all = await subscribe(s, { id: 'all', topic: 'sessions', key: '' });
    const mine = await subscribe(s, { id: 'node', topic: 'sessions', key: 'node1' });
    expect(all.items).toEqual((await query(c, '/v1/session/list')).body);
    expect(mine.items).toEqual((await query(c, '/v1/session/node/node1')).body);

    const from = s.mark;
    const id = await c.session({ Name: 'stream-session' });
    const ev = await s.next(from, (m) => m.id === 'all' && m.type === 'event', 'the session upsert');
    const ev2 = await s.next(from, (m) => m.id === 'node' && m.type === 'event', 'the node session upsert');
    const info = await query(c, `/v1/session/info/${id}`);
    const list = await query(c, '/v1/session/list');
    expect(ev).toEqual({ type: 'event', id: 'all', index: list.index, op: 'upsert', key: id, value: info.body[0] });
    expect(ev2).toMatchObject({ index: list.index, op: 'upsert', key: id, value: info.body[0] });

    const from2 = s.mark;
    ok(await c.put(`/v1/session/destroy/${id}`), 'destroy');
    const gone = await s.next(from2, (m) => m.id === 'all' && m.type === 'event', 'the session delete');
    expect(gone).toEqual({ type: 'event', id: 'all', index: (await query(c, '/v1/session/list')).index, op: 'delete', key: id });
  });
});

describe('serving_status (the WebSocket twin of Watch)', () => {
  test('passing → critical → passing gives exactly SERVING, NOT_SERVING, SERVING', async () => {
    await registerService(c, 'ss-a', 'ss-a-1');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'w', topic: 'serving_status', key: 'ss-a' });
    expect(sub.keys).toEqual(['ss-a']);
    const from = s.mark;
    await setCheck(c, 'service:ss-a-1', 'fail');
    await s.next(from, (m) => m.id === 'w' && m.type === 'event', 'NOT_SERVING');
    await setCheck(c, 'service:ss-a-1', 'fail', 'still down'); // no change of status: nothing
    await setCheck(c, 'service:ss-a-1', 'pass');
    await registerService(c, 'ss-a', 'ss-a-2'); // a second healthy instance: still SERVING, nothing
    const events = await settled(s, from, 'w');
    const statuses = [...sub.items.map((i) => i.status), ...events.map((m) => m.value.status)];
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
    expect(events.every((m) => m.type === 'event' && m.op === 'upsert' && m.key === 'ss-a')).toBe(true);
  });

  test('an unknown name is SERVICE_UNKNOWN, then its status once registered; "" is SERVING', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'u', topic: 'serving_status', key: 'ss-later' });
    expect(sub.items).toEqual([{ status: 'SERVICE_UNKNOWN' }]);
    const self = await subscribe(s, { id: 'self', topic: 'serving_status', key: '' });
    expect(self.items).toEqual([{ status: 'SERVING' }]);
    expect(self.keys).toEqual(['']);

    const from = s.mark;
    await registerService(c, 'ss-later', 'ss-later-1', 'critical');
    const first = await s.next(from, (m) => m.id === 'u' && m.type === 'event', 'the first status');
    expect(first.value).toEqual({ status: 'NOT_SERVING' });
    expect(first.index).toBe((await query(c, '/v1/health/service/ss-later')).index);
    const from2 = s.mark;
    await setCheck(c, 'service:ss-later-1', 'pass');
    expect((await s.next(from2, (m) => m.id === 'u' && m.type === 'event', 'SERVING')).value).toEqual({ status: 'SERVING' });
    const from3 = s.mark;
    ok(await c.put('/v1/agent/service/deregister/ss-later-1'), 'deregister');
    expect((await s.next(from3, (m) => m.id === 'u' && m.type === 'event', 'SERVICE_UNKNOWN')).value).toEqual({ status: 'SERVICE_UNKNOWN' });
    expect(s.since(from, 'self')).toEqual([]);
  });
});

describe('list-then-watch, resume and reset (§4.4)', () => {
  test('an X-Consul-Index from an HTTP list resumes with only later changes', async () => {
    await kvPut(c, 'ltw/a', '1');
    await registerService(c, 'ltw-svc', 'ltw-svc-1');
    const kv = await query(c, '/v1/kv/ltw/?recurse');
    const health = await query(c, '/v1/health/service/ltw-svc');
    await kvPut(c, 'elsewhere/ltw', 'a change outside both views');
    const s = await Stream.open(agent);
    const from = s.mark;
    const k = await subscribe(s, { id: 'kv', topic: 'kv_prefix', key: 'ltw/', index: kv.index });
    const h = await subscribe(s, { id: 'h', topic: 'service_health', key: 'ltw-svc', index: health.index });
    expect(k.subscribed).toMatchObject({ type: 'subscribed', id: 'kv', resumed: true, epoch: expect.any(String) });
    expect(k.subscribed.index).toBeGreaterThanOrEqual(kv.index);
    expect(h.subscribed).toMatchObject({ resumed: true });
    expect(await settled(s, from, 'kv')).toEqual([k.subscribed]);
    expect(s.since(from, 'h')).toEqual([h.subscribed]);

    const from2 = s.mark;
    await kvPut(c, 'ltw/b', '2');
    const ev = await s.next(from2, (m) => m.id === 'kv' && m.type === 'event', 'the later change');
    expect(ev).toMatchObject({ op: 'upsert', key: 'ltw/b', index: (await query(c, '/v1/kv/ltw/?recurse')).index });
    expect(ev.index).toBeGreaterThan(kv.index);
    expect(await settled(s, from2, 'kv')).toEqual([ev]);
  });

  test('resume after a gap: one batch with the newest state of each changed item and the deletes, nothing else', async () => {
    await kvPut(c, 'gap/a', 'a0');
    await kvPut(c, 'gap/b', 'b0');
    await kvPut(c, 'gap/c', 'c0');
    const first = await Stream.open(agent);
    const sub = await subscribe(first, { id: 'g', topic: 'kv_prefix', key: 'gap/' });
    const last = sub.end!.index;
    const epoch = sub.subscribed.epoch;
    first.end();

    await kvPut(c, 'gap/a', 'a1');
    await kvPut(c, 'gap/a', 'a2');
    ok(await c.del('/v1/kv/gap/b'), 'delete gap/b');
    await kvPut(c, 'gap/d', 'd0');
    await kvPut(c, 'nogap/x', 'outside the prefix');

    const s = await Stream.open(agent);
    const from = s.mark;
    const resumed = await subscribe(s, { id: 'g', topic: 'kv_prefix', key: 'gap/', index: last, epoch });
    expect(resumed.subscribed).toMatchObject({ resumed: true, epoch });
    const msgs = await settled(s, from, 'g');
    expect(msgs.map((m) => m.type)).toEqual(['subscribed', 'batch']);
    const batch = msgs[1]!;
    const http = await query(c, '/v1/kv/gap/?recurse');
    expect(batch.index).toBeGreaterThanOrEqual(http.index);
    const byKey = Object.fromEntries(batch.events.map((e: any) => [e.key, e]));
    expect(Object.keys(byKey).sort()).toEqual(['gap/a', 'gap/b', 'gap/d']);
    expect(batch.events).toHaveLength(3);
    expect(byKey['gap/a']).toEqual({ op: 'upsert', key: 'gap/a', value: http.body.find((e: any) => e.Key === 'gap/a') });
    expect(Buffer.from(byKey['gap/a'].value.Value, 'base64').toString()).toBe('a2');
    expect(byKey['gap/b']).toEqual({ op: 'delete', key: 'gap/b' });
    expect(byKey['gap/d']).toEqual({ op: 'upsert', key: 'gap/d', value: http.body.find((e: any) => e.Key === 'gap/d') });
  });

  test('resume without a gap: resumed, no replay', async () => {
    await kvPut(c, 'nogap2/a', 'a');
    const first = await Stream.open(agent);
    const sub = await subscribe(first, { id: 'n', topic: 'kv_prefix', key: 'nogap2/' });
    first.end();
    await kvPut(c, 'unrelated/nogap2', 'x');
    const s = await Stream.open(agent);
    const from = s.mark;
    const again = await subscribe(s, { id: 'n', topic: 'kv_prefix', key: 'nogap2/', index: sub.end!.index, epoch: sub.subscribed.epoch });
    expect(again.subscribed).toMatchObject({ resumed: true });
    expect(await settled(s, from, 'n')).toEqual([again.subscribed]);
  });

  test('a wrong epoch gives reset{epoch_changed} and a fresh snapshot', async () => {
    await kvPut(c, 'epoch/a', 'a');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'e', topic: 'kv_prefix', key: 'epoch/', index: 1, epoch: 'not-this-server' });
    expect(sub.subscribed).toMatchObject({ resumed: false });
    expect(sub.subscribed.epoch).not.toBe('not-this-server');
    expect(sub.reset).toEqual({ type: 'reset', id: 'e', reason: 'epoch_changed' });
    expect(sub.msgs.map((m) => m.type)).toEqual(['subscribed', 'reset', 'snapshot', 'end_of_snapshot']);
    expect(sub.items).toEqual((await query(c, '/v1/kv/epoch/?recurse')).body);
  });

  test('an index ahead of the server gives reset and a fresh snapshot', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'f', topic: 'kv_prefix', key: 'epoch/', index: 1_000_000_000 });
    expect(sub.reset).toMatchObject({ type: 'reset', id: 'f', reason: expect.stringMatching(/^(epoch_changed|index_too_old)$/) });
    expect(sub.end).toBeDefined();
  });

  test('an index older than the ring (10000 changes) gives reset{index_too_old} and a fresh snapshot', async () => {
    const s0 = await Stream.open(agent);
    const start = await subscribe(s0, { id: 'r', topic: 'kv_prefix', key: 'ring/' });
    s0.end();
    // 10,100 changes (distinct values: an identical write changes nothing), 32 at a time.
    await bulkWrites(agent, 10_100, 32, (i) => ({ path: `/v1/kv/ring/${i % 100}`, body: `v${i}` }));
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'r', topic: 'kv_prefix', key: 'ring/', index: start.end!.index, epoch: start.subscribed.epoch });
    expect(sub.subscribed).toMatchObject({ resumed: false, epoch: start.subscribed.epoch });
    expect(sub.reset).toEqual({ type: 'reset', id: 'r', reason: 'index_too_old' });
    expect(sub.msgs.map((m) => m.type).slice(0, 2)).toEqual(['subscribed', 'reset']);
    expect(sub.items).toEqual((await query(c, '/v1/kv/ring/?recurse')).body);
    expect(sub.items).toHaveLength(100);
  }, 30_000);
});

describe('session invalidation arrives as one batch', () => {
  for (const behavior of ['release', 'delete'] as const) {
    test(`destroy of a session holding 3 locks (Behavior ${behavior})`, async () => {
      const prefix = `inv-${behavior}/`;
      const session = await c.session({ Behavior: behavior, LockDelay: '0s' });
      for (const k of ['a', 'b', 'c']) await kvPut(c, `${prefix}${k}`, `value-${k}`, `?acquire=${session}`);
      const s = await Stream.open(agent);
      const sub = await subscribe(s, { id: 'l', topic: 'kv_prefix', key: prefix });
      expect(sub.items.map((e) => e.Session)).toEqual([session, session, session]);

      const from = s.mark;
      ok(await c.put(`/v1/session/destroy/${session}`), 'destroy');
      const msgs = await settled(s, from, 'l');
      expect(msgs.map((m) => m.type)).toEqual(['batch']);
      const batch = msgs[0]!;
      expect(batch.events.map((e: any) => e.key).sort()).toEqual([`${prefix}a`, `${prefix}b`, `${prefix}c`]);
      if (behavior === 'release') {
        const http = await query(c, `/v1/kv/${prefix}?recurse`);
        expect(batch.index).toBe(http.index);
        for (const e of batch.events) {
          expect(e.op).toBe('upsert');
          expect(e.value).not.toHaveProperty('Session');
          expect(e.value).toEqual(http.body.find((x: any) => x.Key === e.key));
        }
      } else {
        const r = await c.get(`/v1/kv/${prefix}?recurse`);
        expect(r.status).toBe(404);
        expect(batch.index).toBe(Number(r.headers.get('x-consul-index')));
        for (const e of batch.events) expect(e).toEqual({ op: 'delete', key: e.key });
      }
    });
  }
});

describe('slow consumers (§4.6)', () => {
  /** Index order of what a reader got before it was closed: never backwards per subscription. */
  function expectIncreasing(msgs: Msg[]): void {
    let last = 0;
    for (const m of msgs) {
      if (m.type !== 'event' && m.type !== 'batch') continue;
      expect(m.index, `index went backwards: ${JSON.stringify({ type: m.type, index: m.index })}`).toBeGreaterThan(last);
      last = m.index;
    }
  }

  test('a stalled reader of large values is closed with 4008 "slow consumer"', async () => {
    const s = await Stream.open(agent);
    await subscribe(s, { id: 'slow', topic: 'kv_prefix', key: 'slow/' });
    const socket = (s.ws as any)._socket as import('node:net').Socket;
    socket.pause();
    const value = Buffer.alloc(64 * 1024, 'v');
    await bulkWrites(agent, 300, 8, (i) => ({ path: `/v1/kv/slow/${i}`, body: Buffer.concat([Buffer.from(`${i}:`), value]) }));
    socket.resume();
    const closed = await s.closed(10_000);
    const got = s.since(0, 'slow');
    expectIncreasing(got);
    const seen = `${closed === undefined ? 'still open after 10 s' : `closed ${closed.code}`}; got ${got.length} messages, ${got.filter((m) => m.type === 'batch').length} batches`;
    expect(closed, seen).toEqual({ code: 4008, reason: 'slow consumer' });
  }, 30_000);

  test('a stalled reader holding more than limits.stream_held_items_max items is closed with 4008 "slow consumer"', async () => {
    // Its own agent with a low soft limit (events are held as soon as 64 KiB wait in uWS, whatever the
    // kernel's socket buffers absorbed), a hard byte limit the writes below stay under, and 1000 items.
    const file = join(configDir, 'held.json');
    writeFileSync(file, JSON.stringify({ limits: { stream_buffered_bytes_soft: 64 * 1024, stream_buffered_bytes_hard: 7 * 1024 * 1024, stream_held_items_max: 1000 } }));
    const own = await startAgent({ args: ['--config-file', file] });
    try {
      const s = await Stream.open(own);
      await subscribe(s, { id: 'many', topic: 'kv_prefix', key: 'many/' });
      const socket = (s.ws as any)._socket as import('node:net').Socket;
      socket.pause();
      const value = Buffer.alloc(64 * 1024, 'v');
      // About 6.3 MB, past the soft limit unless the kernel took nearly all of it; then 1,050 distinct small items.
      await bulkWrites(own, 96, 8, (i) => ({ path: `/v1/kv/many/big${i}`, body: value }));
      await bulkWrites(own, 1_050, 32, (i) => ({ path: `/v1/kv/many/s${i}`, body: `v${i}` }));
      socket.resume();
      const closed = await s.closed(10_000);
      expectIncreasing(s.since(0, 'many'));
      expect(closed).toEqual({ code: 4008, reason: 'slow consumer' });
    } finally {
      await own.stop();
      own.cleanup();
    }
  }, 30_000);

  /** 300 values of 64 KiB (about 26 MB of snapshot, over uWS's 8 MiB maxBackpressure), written once. */
  let bigSnapshotWritten = false;
  async function writeBigSnapshot(): Promise<void> {
    if (bigSnapshotWritten) return;
    const value = Buffer.alloc(64 * 1024, 's');
    await bulkWrites(agent, 300, 8, (i) => ({ path: `/v1/kv/bigsnap/${i}`, body: value }));
    bigSnapshotWritten = true;
  }

  /** How a big snapshot ended on `s`: "<n> items" at end_of_snapshot, or the close and how far it got. */
  async function snapshotOutcome(s: Stream, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (s.closeInfo === undefined && !s.msgs.some((m) => m.type === 'end_of_snapshot') && Date.now() < deadline) await sleep(20);
    const items = s.msgs.filter((m) => m.type === 'snapshot').reduce((n, m) => n + m.items.length, 0);
    if (s.closeInfo !== undefined) return `closed ${s.closeInfo.code} after ${items} items`;
    return s.msgs.some((m) => m.type === 'end_of_snapshot') ? `${items} items` : `no end_of_snapshot after ${items} items`;
  }

  test('a snapshot larger than the backpressure limit reaches a reading client whole', async () => {
    await writeBigSnapshot();
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const s = await Stream.open(agent);
      s.send({ op: 'subscribe', id: 'b', topic: 'kv_prefix', key: 'bigsnap/' });
      outcomes.push(await snapshotOutcome(s, 10_000));
      s.end();
    }
    expect(outcomes).toEqual(['300 items', '300 items', '300 items']);
  }, 60_000);

  test('a reader paused during a big snapshot gets it whole, in order, then the change made meanwhile', async () => {
    await writeBigSnapshot();
    const s = await Stream.open(agent);
    const socket = (s.ws as any)._socket as import('node:net').Socket;
    socket.pause();
    s.send({ op: 'subscribe', id: 'p', topic: 'kv_prefix', key: 'bigsnap/' });
    await sleep(300);
    await kvPut(c, 'bigsnap/0', 'changed while the snapshot waited');
    await sleep(200);
    socket.resume();
    expect(await snapshotOutcome(s, 15_000)).toBe('300 items');
    const change = await s.next(0, (m) => m.id === 'p' && (m.type === 'event' || m.type === 'batch'), 'the change after the snapshot', 10_000);
    const msgs = s.since(0, 'p');
    const types = msgs.map((m) => m.type);
    expect(types[0]).toBe('subscribed');
    expect(types.indexOf('end_of_snapshot')).toBe(types.lastIndexOf('snapshot') + 1);
    expect(types.lastIndexOf('snapshot')).toBeLessThan(msgs.indexOf(change));
    expect(msgs.filter((m) => m.type === 'snapshot').slice(0, -1).every((m) => m.more === true)).toBe(true);
    expect(msgs.filter((m) => m.type === 'snapshot').at(-1)!.more).toBe(false);
    const events = change.type === 'batch' ? change.events : [change];
    expect(events.map((e: any) => e.key)).toEqual(['bigsnap/0']);
    expect(Buffer.from(events[0].value.Value, 'base64').toString()).toBe('changed while the snapshot waited');
    expect(change.index).toBeGreaterThan(msgs[0]!.index);
    expect(change.index).toBe((await query(c, '/v1/kv/bigsnap/0')).index);
    expect(s.closeInfo).toBeUndefined();
  }, 60_000);
});

describe('bookmarks, unsubscribe, errors (§4.2, §4.5, §4.7)', () => {
  test('a bookmark follows silence (stream_bookmark_interval 1s) and carries the current index', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'bm', topic: 'kv_prefix', key: 'bm/' });
    const first = await s.next(0, (m) => m.type === 'bookmark', 'a bookmark');
    expect(Object.keys(first).sort()).toEqual(['index', 'type']);
    expect(first.index).toBeGreaterThanOrEqual(sub.subscribed.index);
    const from = s.mark;
    await kvPut(c, 'bm/a', 'x');
    const ev = await s.next(from, (m) => m.id === 'bm' && m.type === 'event', 'the event');
    const next = await s.next(from, (m) => m.type === 'bookmark', 'the next bookmark');
    expect(next.index).toBeGreaterThanOrEqual(ev.index);
    expect(s.msgs.indexOf(next)).toBeGreaterThan(s.msgs.indexOf(ev));
  });

  test('unsubscribe answers unsubscribed and stops the events of that subscription only', async () => {
    const s = await Stream.open(agent);
    await subscribe(s, { id: 'gone', topic: 'kv_prefix', key: 'unsub/' });
    await subscribe(s, { id: 'kept', topic: 'kv_prefix', key: 'unsub/' });
    const from = s.mark;
    s.send({ op: 'unsubscribe', id: 'gone' });
    expect(await s.next(from, (m) => m.id === 'gone', 'unsubscribed')).toEqual({ type: 'unsubscribed', id: 'gone' });
    await kvPut(c, 'unsub/a', 'x');
    await s.next(from, (m) => m.id === 'kept' && m.type === 'event', 'the event of the kept subscription');
    expect(await settled(s, from, 'gone')).toEqual([{ type: 'unsubscribed', id: 'gone' }]);
  });

  test('refusals: unknown_topic, bad_key, already_subscribed, too_many_subscriptions; the connection stays usable', async () => {
    const s = await Stream.open(agent);
    expect(await refused(s, { id: 't', topic: 'no_such_topic', key: 'x' })).toMatchObject({ type: 'error', id: 't', code: 'unknown_topic', message: expect.any(String) });
    expect(await refused(s, { id: 'k', topic: 'checks_in_state', key: 'bogus' })).toMatchObject({ type: 'error', id: 'k', code: 'bad_key', message: expect.any(String) });
    await subscribe(s, { id: 'dup', topic: 'kv_prefix', key: 'errs/' });
    expect(await refused(s, { id: 'dup', topic: 'kv_prefix', key: 'errs/' })).toMatchObject({ type: 'error', id: 'dup', code: 'already_subscribed' });
    for (let i = 1; i < 64; i++) await subscribe(s, { id: `n${i}`, topic: 'kv_prefix', key: `errs/${i}/` });
    expect(await refused(s, { id: 'n64', topic: 'kv_prefix', key: 'errs/64/' })).toMatchObject({ type: 'error', id: 'n64', code: 'too_many_subscriptions' });
    expect(s.closeInfo).toBeUndefined();
    const from = s.mark;
    await kvPut(c, 'errs/x', 'still delivered');
    expect(await s.next(from, (m) => m.id === 'dup' && m.type === 'event', 'an event on the first subscription')).toMatchObject({ key: 'errs/x' });
  });

  for (const [what, text] of [['bad JSON', '{not json'], ['a JSON array', '[1,2]'], ['an unknown op', '{"op":"frobnicate","id":"x"}']] as const) {
    test(`${what} closes the connection with 1008`, async () => {
      const s = await Stream.open(agent);
      s.send(text);
      expect((await s.closed())?.code).toBe(1008);
    });
  }
});

describe('shutdown and restart', () => {
  test('SIGTERM closes every client with 1001; after a restart an old epoch resets and an old index is too old', async () => {
    const own = await startAgent();
    const oc = client(own);
    let restarted: Agent | undefined;
    try {
      await kvPut(oc, 'down/a', 'a');
      const a = await Stream.open(own);
      const b = await Stream.open(own);
      const sub = await subscribe(a, { id: 'a', topic: 'kv_prefix', key: 'down/' });
      await subscribe(b, { id: 'b', topic: 'serving_status', key: '' });
      await kvPut(oc, 'down/b', 'b'); // the restarted node's history starts after this
      expect(await own.stop()).toBe(0);
      expect((await a.closed())?.code).toBe(1001);
      expect((await b.closed())?.code).toBe(1001);
      // "" may turn NOT_SERVING on the way down, never anything else.
      for (const m of b.since(0, 'b').filter((x) => x.type === 'event')) expect(m.value).toEqual({ status: 'NOT_SERVING' });

      restarted = await startAgent({ dataDir: own.dataDir });
      const s = await Stream.open(restarted);
      const old = await subscribe(s, { id: 'old', topic: 'kv_prefix', key: 'down/', index: sub.end!.index, epoch: sub.subscribed.epoch });
      expect(old.reset).toEqual({ type: 'reset', id: 'old', reason: 'epoch_changed' });
      expect(old.subscribed.epoch).not.toBe(sub.subscribed.epoch);
      expect(old.items).toEqual((await query(client(restarted), '/v1/kv/down/?recurse')).body);
      const noEpoch = await subscribe(s, { id: 'noepoch', topic: 'kv_prefix', key: 'down/', index: sub.end!.index });
      expect(noEpoch.reset).toEqual({ type: 'reset', id: 'noepoch', reason: 'index_too_old' });
      expect(noEpoch.items).toHaveLength(2);
    } finally {
      for (const s of [...opened]) s.end();
      if (restarted !== undefined) await restarted.stop();
      await own.stop();
      own.cleanup();
    }
  }, 40_000);
});
