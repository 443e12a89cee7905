/**
 * What the stream suites share: a `ws` client of /v1/stream that records every message, subscribe/refuse helpers,
 * HTTP helpers to compare against, and one agent per file with a 1 s bookmark interval.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import WebSocket from 'ws';
import { client, sleep, type HttpResult } from './agent.ts';

export type Client = ReturnType<typeof client>;
export type Msg = Record<string, any> & { type: string };

export const subprotocol = 'registry.stream.v1';
/** TTL checks that never lapse while the file runs: every status is set by the test. */
export const ttl = '10m';
/** How long "nothing more arrives" is watched for. */
export const quietMs = 300;
/** Bound of every wait for a message or a close. */
export const waitMs = 5_000;
export const maxFlags = '18446744073709551615';
export const bigFlags = '3304740253564472344';

// ---------------------------------------------------------------- a stream client

export function streamUrl(agent: { url: string }): string {
  return `ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`;
}

/** Every stream opened by a test, terminated after it. */
export const opened = new Set<Stream>();

/** One `ws` connection that keeps every message (parsed and raw) and how it closed. */
export class Stream {
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

export interface Subscribed {
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
export async function subscribe(s: Stream, req: Record<string, unknown>): Promise<Subscribed> {
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
export async function refused(s: Stream, req: Record<string, unknown>): Promise<Msg> {
  const from = s.mark;
  s.send({ op: 'subscribe', ...req });
  return s.next(from, (m) => m.id === req.id && m.type !== 'bookmark', `the answer to subscribe ${String(req.id)}`);
}

/** Messages of `id` from `from` on once nothing more has arrived for a while. */
export async function settled(s: Stream, from: number, id: string): Promise<Msg[]> {
  let n = -1;
  for (let i = 0; i < 20 && n !== s.since(from, id).length; i++) {
    n = s.since(from, id).length;
    await sleep(quietMs);
  }
  return s.since(from, id);
}

// ---------------------------------------------------------------- HTTP helpers

export function ok(r: HttpResult, what: string): HttpResult {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r;
}

/** A query GET: its parsed body and X-Consul-Index. */
export async function query(c: Client, path: string): Promise<{ body: any; index: number; text: string }> {
  const r = ok(await c.get(path), `GET ${path}`);
  return { body: r.json(), index: Number(r.headers.get('x-consul-index')), text: r.text };
}

export async function registerService(c: Client, name: string, id: string, status = 'passing'): Promise<void> {
  ok(await c.put('/v1/agent/service/register', { Name: name, ID: id, Port: 8080, Check: { TTL: ttl, Status: status } }), `register ${id}`);
}

export async function setCheck(c: Client, checkId: string, verb: 'pass' | 'warn' | 'fail', note?: string): Promise<void> {
  const q = note === undefined ? '' : `?note=${encodeURIComponent(note)}`;
  ok(await c.put(`/v1/agent/check/${verb}/${encodeURIComponent(checkId)}${q}`), `${verb} ${checkId}`);
}

export async function kvPut(c: Client, key: string, value: string, query = ''): Promise<void> {
  const r = ok(await c.put(`/v1/kv/${key}${query}`, value), `PUT ${key}`);
  if (r.text.trim() !== 'true') throw new Error(`PUT ${key}${query}: ${r.text}`);
}

/** `n` writes through a pool of `connections`, each producing one change (distinct values). */
export async function bulkWrites(agent: { url: string }, n: number, connections: number, write: (i: number) => { path: string; body: string | Buffer }): Promise<void> {
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

export const checkKey = (c: { Node: string; CheckID: string }) => `${c.Node}/${c.CheckID}`;

/** Subscribes `req` and asserts its snapshot is the check list HTTP answers at `path`, keyed node/check. */
export async function expectChecksSnapshot(s: Stream, c: Client, req: Record<string, unknown>, path: string): Promise<void> {
  const sub = await subscribe(s, req);
  const http = await query(c, path);
  expect(sub.items).toEqual(http.body);
  expect(sub.keys).toEqual(http.body.map(checkKey));
}

/**
 * One agent for the file, started by `start` (either harness) with a 1 s bookmark interval and handed to `ready`
 * with the folder of its config file (a test may write its own beside it);
 * every stream a test opened is ended after it, the agent stopped after the file.
 */
export function streamSuite<A extends { stop(): Promise<unknown>; cleanup(): void }>(start: (o: { args: string[] }) => Promise<A>, ready: (agent: A, configDir: string) => void): void {
  let configDir: string | undefined;
  let agent: A | undefined;

  beforeAll(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'roster-stream-'));
    const configFile = join(configDir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ stream_bookmark_interval: '1s' }));
    agent = await start({ args: ['--config-file', configFile] });
    ready(agent, configDir);
  });

  afterAll(async () => {
    for (const s of [...opened]) s.end();
    await agent?.stop();
    agent?.cleanup();
    if (configDir !== undefined) rmSync(configDir, { recursive: true, force: true });
  });

  afterEach(() => {
    for (const s of [...opened]) s.end();
  });
}
