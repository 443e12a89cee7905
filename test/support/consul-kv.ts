/**
 * What the consul-kv suites share: the two dialect drivers (the real npm `consul` 2.0.1 client for the consul
 * dialect, raw HTTP for the seed dialect), wire assertions, and one agent per dialect per suite.
 */
import { EventEmitter } from 'node:events';
import Consul from 'consul';
import { afterAll, beforeAll, expect } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent, type HttpResult } from './in-process.ts';

export type Dialect = 'consul' | 'seed';
export type Raw = ReturnType<typeof client>;

export interface Entry {
  LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string; CreateIndex: number; ModifyIndex: number;
}
export interface SessionRec {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; CreateIndex: number; ModifyIndex: number;
}
/** Session options by the npm client's names (it sends them as LockDelay, Name, Node, Checks, Behavior, TTL). */
export interface SessionOpts { name?: string; node?: string; lockdelay?: string; checks?: string[]; behavior?: string; ttl?: string }
/** Query options a read accepts (consistency, datacenter, token). */
export interface ReadOpts { stale?: boolean; consistent?: boolean; dc?: string; token?: string }
export interface WriteOpts { flags?: number | string; cas?: number; acquire?: string; release?: string }
/** Outcome of a conditional write: consul `true`/`false`; seed 200 `true` / 409 code 1025 with details.reason. */
export interface Verdict { ok: boolean; reason?: string }
export interface Read { index: number; entry: Entry | undefined }

/** The Go lock helper's flag (0x2ddccbc058a50c18); a JS number cannot hold it. */
export const lockFlags = '3304740253564472344';
export const maxFlags = '18446744073709551615';
export const kvValueMaxBytes = 524288;
export const sessionFieldOrder = ['ID', 'Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'CreateIndex', 'ModifyIndex'];
export const entryFieldOrder = ['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex'];
export const lockedEntryFieldOrder = ['LockIndex', 'Key', 'Flags', 'Value', 'Session', 'CreateIndex', 'ModifyIndex'];
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const unknownSession = '0f0e0d0c-0b0a-4908-8706-050403020100';
export const textPlain = 'text/plain; charset=utf-8';

/** A failed request in the seed driver: the raw result, so tests can check status and code. */
export class SeedHttpError extends Error {
  constructor(readonly r: HttpResult) { super(`HTTP ${r.status}: ${r.text}`); }
}

/** One scenario step, spoken by either dialect. Consul: the npm client; seed: raw HTTP. */
export interface Driver {
  createSession(o: SessionOpts): Promise<string>;
  sessionInfo(id: string): Promise<SessionRec | undefined>;
  sessionNode(node: string): Promise<SessionRec[]>;
  sessionList(): Promise<SessionRec[]>;
  renew(id: string): Promise<SessionRec[]>;
  destroy(id: string): Promise<void>;
  get(key: string, o?: ReadOpts): Promise<Entry | undefined>;
  getRecurse(prefix: string): Promise<Entry[] | undefined>;
  keys(prefix: string, separator?: string): Promise<string[]>;
  getRaw(key: string): Promise<Buffer>;
  set(key: string, value: string | Buffer, o?: WriteOpts): Promise<Verdict>;
  del(key: string, o?: { recurse?: boolean; cas?: number }): Promise<Verdict>;
  /** A (blocking when index > 0) read that also hands back X-Consul-Index. */
  read(key: string, index: number, wait: string): Promise<Read>;
  /** Watches one key like node-consul's watch: index from 0, emits on every index increase. */
  watch(key: string, wait: string): Watcher;
}

export interface Watcher {
  changes: Read[];
  errors: unknown[];
  ended: () => boolean;
  end(): void;
}

export const decode = (v: string | null) => (v === null ? null : Buffer.from(v, 'base64').toString());
export const enc = encodeURIComponent;

/**
 * papi resolves a falsy decoded body as `undefined` (its `next(false, undefined, body)` only keeps a truthy body), so
 * node-consul hands back `undefined` where the wire says `false`; the raw checks assert the `false` text itself.
 */
export function clientVerdict(result: unknown): Verdict {
  expect([true, undefined]).toContain(result);
  return { ok: result === true };
}

export function consulDriver(consul: any): Driver {
  return {
    createSession: async (o) => (await consul.session.create(o)).ID,
    sessionInfo: (id) => consul.session.info(id),
    sessionNode: (node) => consul.session.node(node),
    sessionList: () => consul.session.list(),
    renew: (id) => consul.session.renew(id),
    destroy: async (id) => { expect(await consul.session.destroy(id)).toBeUndefined(); },
    get: (key, o = {}) => consul.kv.get({ key, ...o }),
    getRecurse: (key) => consul.kv.get({ key, recurse: true }),
    keys: (key, separator) => consul.kv.keys(separator === undefined ? { key } : { key, separator }),
    getRaw: (key) => consul.kv.get({ key, raw: true }),
    set: async (key, value, o = {}) => clientVerdict(await consul.kv.set({ key, value, ...o })),
    del: async (key, o = {}) => clientVerdict(await consul.kv.del({ key, ...o })),
    read: async (key, index, wait) => {
      // The client hands back the response (and its index) when ctx.includeResponse is set, as its watch does.
      const ctx = Object.assign(new EventEmitter(), { includeResponse: true });
      const [res, entry] = await consul.kv.get(index > 0 ? { key, index, wait, ctx } : { key, ctx });
      return { index: Number(res.headers['x-consul-index']), entry };
    },
    watch: (key, wait) => {
      const w = consul.watch({ method: consul.kv.get, options: { key, wait } });
      const out: Watcher = { changes: [], errors: [], ended: () => !w.isRunning(), end: () => w.end() };
      w.on('change', (entry: Entry | undefined, res: any) => out.changes.push({ index: Number(res.headers['x-consul-index']), entry }));
      w.on('error', (err: unknown) => out.errors.push(err));
      return out;
    },
  };
}

function okJson<T>(r: HttpResult): T {
  if (r.status !== 200) throw new SeedHttpError(r);
  return r.json<T>();
}

/** 200 true → ok; 409 1025 → not ok with the reason; anything else throws. */
function verdict(r: HttpResult): Verdict {
  if (r.status === 200) {
    expect(r.text).toBe('true');
    return { ok: true };
  }
  if (r.status === 409) {
    const body = expectError(r, 409, 1025);
    return { ok: false, reason: body.details?.reason };
  }
  throw new SeedHttpError(r);
}

const decoded = (e: Entry): Entry => ({ ...e, Value: decode(e.Value) });

function query(pairs: [string, unknown][]): string {
  const s = pairs.filter(([, v]) => v !== undefined && v !== false).map(([k, v]) => (v === true ? k : `${k}=${enc(String(v))}`)).join('&');
  return s ? `?${s}` : '';
}

/** The session create body by the npm client's option names. */
function sessionBody(o: SessionOpts): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.lockdelay) body.LockDelay = o.lockdelay;
  if (o.name) body.Name = o.name;
  if (o.node) body.Node = o.node;
  if (o.checks) body.Checks = o.checks;
  if (o.behavior) body.Behavior = o.behavior;
  if (o.ttl) body.TTL = o.ttl;
  return body;
}

type ReadOnce = (key: string, index: number, wait: string, signal?: AbortSignal) => Promise<Read>;

function reader(url: string): ReadOnce {
  return async (key, index, wait, signal) => {
    const res = await fetch(`${url}/v1/kv/${enc(key)}${index > 0 ? `?index=${index}&wait=${wait}` : ''}`, { signal });
    const text = await res.text();
    const idx = Number(res.headers.get('x-consul-index'));
    if (res.status === 404) return { index: idx, entry: undefined };
    if (res.status !== 200) throw new Error(`read ${key}: ${res.status} ${text}`);
    return { index: idx, entry: decoded(JSON.parse(text)[0]) };
  };
}

/** node-consul's watch over raw HTTP: index from 0, a change on every index increase (and a reset when it goes back). */
function seedWatch(readOnce: ReadOnce, key: string, wait: string): Watcher {
  const ac = new AbortController();
  let ended = false;
  const out: Watcher = {
    changes: [], errors: [], ended: () => ended,
    end: () => { ended = true; ac.abort(); },
  };
  void (async () => {
    let index = 0;
    while (!ended) {
      try {
        const r = await readOnce(key, index, wait, ac.signal);
        if (ended) break;
        if (r.index > index || r.index < index) {
          index = r.index < index ? 0 : r.index;
          out.changes.push(r);
        }
      } catch (err) {
        if (!ended) { out.errors.push(err); await sleep(200); }
      }
    }
  })();
  return out;
}

/** A 404 with code 1006 → undefined; anything else through `then`. */
function unlessMissing<T>(r: HttpResult, then: (r: HttpResult) => T): T | undefined {
  if (r.status !== 404) return then(r);
  expectError(r, 404, 1006);
  return undefined;
}

export function seedDriver(url: string, c: Raw): Driver {
  const readOnce = reader(url);
  return {
    createSession: async (o) => okJson<{ ID: string }>(await c.put('/v1/session/create', sessionBody(o))).ID,
    sessionInfo: async (id) => okJson<SessionRec[]>(await c.get(`/v1/session/info/${id}`))[0],
    sessionNode: async (node) => okJson(await c.get(`/v1/session/node/${node}`)),
    sessionList: async () => okJson(await c.get('/v1/session/list')),
    renew: async (id) => okJson(await c.put(`/v1/session/renew/${id}`)),
    destroy: async (id) => {
      const r = await c.put(`/v1/session/destroy/${id}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe('true');
    },
    get: async (key, o = {}) => {
      const headers: Record<string, string> = o.token ? { 'X-Consul-Token': o.token } : {};
      const r = await c.get(`/v1/kv/${enc(key)}${query([['stale', o.stale], ['consistent', o.consistent], ['dc', o.dc]])}`, headers);
      return unlessMissing(r, (ok) => decoded(okJson<Entry[]>(ok)[0]!));
    },
    getRecurse: async (key) => unlessMissing(await c.get(`/v1/kv/${enc(key)}?recurse`), (ok) => okJson<Entry[]>(ok).map(decoded)),
    keys: async (key, separator) => okJson(await c.get(`/v1/kv/${enc(key)}?keys${separator === undefined ? '' : `&separator=${enc(separator)}`}`)),
    getRaw: async (key) => {
      const r = await c.get(`/v1/kv/${enc(key)}?raw`);
      if (r.status !== 200) throw new SeedHttpError(r);
      return r.body;
    },
    set: async (key, value, o = {}) =>
      verdict(await c.put(`/v1/kv/${enc(key)}${query([['flags', o.flags], ['cas', o.cas], ['acquire', o.acquire], ['release', o.release]])}`, value)),
    del: async (key, o = {}) => verdict(await c.del(`/v1/kv/${enc(key)}${query([['recurse', o.recurse], ['cas', o.cas]])}`)),
    read: (key, index, wait) => readOnce(key, index, wait),
    watch: (key, wait) => seedWatch(readOnce, key, wait),
  };
}

/** The rejection of a promise that must fail. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail, it succeeded');
}

/** Consul-dialect plain-text error: status, Go's sniffed content type, exact body. */
export function expectText(r: HttpResult, status: number, text: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toBe(textPlain);
  expect(r.text).toBe(text);
}

/** Consul-dialect JSON success: 200, `application/json` (no charset), exact body text when given. */
export function expectJson(r: HttpResult, text?: string): void {
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get('content-type')).toBe('application/json');
  if (text !== undefined) expect(r.text).toBe(text);
}

export function expectIndexHeaders(r: HttpResult): number {
  const index = r.headers.get('x-consul-index');
  expect(index).toMatch(/^[1-9][0-9]*$/);
  expect(r.headers.get('x-consul-knownleader')).toBe('true');
  expect(r.headers.get('x-consul-lastcontact')).toBe('0');
  return Number(index);
}

/** The exact Flags digits of a key, read from the raw response text (JSON.parse would round them). */
export async function rawFlags(c: Raw, key: string): Promise<string> {
  const r = await c.get(`/v1/kv/${enc(key)}`);
  expect(r.status, r.text).toBe(200);
  const m = /"Flags":(\d+)/.exec(r.text);
  expect(m, r.text).not.toBeNull();
  return m![1]!;
}

/** Polls `cond` every 25 ms up to `maxMs`. */
export async function until(cond: () => boolean, maxMs = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > maxMs) throw new Error('condition not reached in time');
    await sleep(25);
  }
}

export const dialects: Dialect[] = ['consul', 'seed'];

/** One dialect's agent and clients, handed to the suite once started. */
export interface DialectAgent { agent: Agent; raw: Raw; consul: any; d: Driver }

/**
 * Starts one agent in `dialect` for the enclosing suite (stopped after it) and hands its clients to `ready`;
 * returns the suite's assertions in that dialect.
 */
export function consulKvSuite(dialect: Dialect, ready: (s: DialectAgent) => void) {
  const isConsul = dialect === 'consul';
  let seq = 0;
  let started: DialectAgent | undefined;

  beforeAll(async () => {
    const agent = await startAgent({ args: isConsul ? ['--dialect', 'consul'] : [] });
    const raw = client(agent);
    const consul = new Consul({ host: '127.0.0.1', port: Number(new URL(agent.url).port) } as any);
    started = { agent, raw, consul, d: isConsul ? consulDriver(consul) : seedDriver(agent.url, raw) };
    ready(started);
  });

  afterAll(async () => {
    started?.consul.destroy();
    await started?.agent.stop();
  });

  return {
    uniq: (name: string) => `ckv-${dialect}/${name}-${++seq}`,

    /**
     * Asserts the failure of a driver call in this dialect: consul → the client rejects with the plain-text body as its
     * message (papi: text/plain under 80 bytes, else the lower-cased status text) and the status; seed → the raw status
     * and error code. Calls that end in utils.body/empty (kv.set, kv.keys, session.*) reject with the bare message;
     * kv.get's own callback goes through papi's `next(err)`, which prefixes `consul: kv.get: ` (consul-compat §0 says
     * every call is prefixed).
     */
    async expectFailure(p: Promise<unknown>, consulStatus: number, consulMessage: string, seedStatus: number, seedCode: number): Promise<any> {
      const err = await rejection(p);
      if (isConsul) {
        expect(err.message).toBe(consulMessage);
        expect(err.statusCode).toBe(consulStatus);
        return undefined;
      }
      expect(err).toBeInstanceOf(SeedHttpError);
      return expectError((err as SeedHttpError).r, seedStatus, seedCode);
    },

    /** Asserts a refused conditional write: consul `false`; seed 409 1025 with the reason. */
    expectRefused(v: Verdict, seedReason?: string): void {
      expect(v.ok).toBe(false);
      if (!isConsul && seedReason !== undefined) expect(v.reason).toBe(seedReason);
    },
  };
}
