// Goal: sessions, KV, blocking reads and the lock recipe (consul-compat §1.1, §1.2, §2, §3, §6) written once and run in
// both dialects — the consul dialect driven by the real npm `consul` 2.0.1 client, the seed dialect over raw HTTP.
import { EventEmitter } from 'node:events';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent, type HttpResult } from '../support/agent.ts';

type Dialect = 'consul' | 'seed';
type Raw = ReturnType<typeof client>;

interface Entry {
  LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string; CreateIndex: number; ModifyIndex: number;
}
interface SessionRec {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; CreateIndex: number; ModifyIndex: number;
}
/** Session options by the npm client's names (it sends them as LockDelay, Name, Node, Checks, Behavior, TTL). */
interface SessionOpts { name?: string; node?: string; lockdelay?: string; checks?: string[]; behavior?: string; ttl?: string }
/** Query options a read accepts (consistency, datacenter, token). */
interface ReadOpts { stale?: boolean; consistent?: boolean; dc?: string; token?: string }
interface WriteOpts { flags?: number | string; cas?: number; acquire?: string; release?: string }
/** Outcome of a conditional write: consul `true`/`false`; seed 200 `true` / 409 code 1025 with details.reason. */
interface Verdict { ok: boolean; reason?: string }
interface Read { index: number; entry: Entry | undefined }

/** The Go lock helper's flag (0x2ddccbc058a50c18); a JS number cannot hold it. */
const lockFlags = '3304740253564472344';
const maxFlags = '18446744073709551615';
const kvValueMaxBytes = 524288;
const sessionFieldOrder = ['ID', 'Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'CreateIndex', 'ModifyIndex'];
const entryFieldOrder = ['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex'];
const lockedEntryFieldOrder = ['LockIndex', 'Key', 'Flags', 'Value', 'Session', 'CreateIndex', 'ModifyIndex'];
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const unknownSession = '0f0e0d0c-0b0a-4908-8706-050403020100';
const textPlain = 'text/plain; charset=utf-8';

/** A failed request in the seed driver: the raw result, so tests can check status and code. */
class SeedHttpError extends Error {
  constructor(readonly r: HttpResult) { super(`HTTP ${r.status}: ${r.text}`); }
}

/** One scenario step, spoken by either dialect. Consul: the npm client; seed: raw HTTP. */
interface Driver {
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

interface Watcher {
  changes: Read[];
  errors: unknown[];
  ended: () => boolean;
  end(): void;
}

const decode = (v: string | null) => (v === null ? null : Buffer.from(v, 'base64').toString());
const enc = encodeURIComponent;

/**
 * papi resolves a falsy decoded body as `undefined` (its `next(false, undefined, body)` only keeps a truthy body), so
 * node-consul hands back `undefined` where the wire says `false`; the raw checks assert the `false` text itself.
 */
function clientVerdict(result: unknown): Verdict {
  expect([true, undefined]).toContain(result);
  return { ok: result === true };
}

function consulDriver(consul: any): Driver {
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

function seedDriver(url: string, c: Raw): Driver {
  const okJson = <T>(r: HttpResult): T => {
    if (r.status !== 200) throw new SeedHttpError(r);
    return r.json<T>();
  };
  /** 200 true → ok; 409 1025 → not ok with the reason; anything else throws. */
  const verdict = (r: HttpResult): Verdict => {
    if (r.status === 200) {
      expect(r.text).toBe('true');
      return { ok: true };
    }
    if (r.status === 409) {
      const body = expectError(r, 409, 1025);
      return { ok: false, reason: body.details?.reason };
    }
    throw new SeedHttpError(r);
  };
  const decoded = (e: Entry): Entry => ({ ...e, Value: decode(e.Value) });
  const query = (pairs: [string, unknown][]) => {
    const s = pairs.filter(([, v]) => v !== undefined && v !== false).map(([k, v]) => (v === true ? k : `${k}=${enc(String(v))}`)).join('&');
    return s ? `?${s}` : '';
  };
  const readOnce = async (key: string, index: number, wait: string, signal?: AbortSignal): Promise<Read> => {
    const res = await fetch(`${url}/v1/kv/${enc(key)}${index > 0 ? `?index=${index}&wait=${wait}` : ''}`, { signal });
    const text = await res.text();
    const idx = Number(res.headers.get('x-consul-index'));
    if (res.status === 404) return { index: idx, entry: undefined };
    if (res.status !== 200) throw new Error(`read ${key}: ${res.status} ${text}`);
    return { index: idx, entry: decoded(JSON.parse(text)[0]) };
  };
  return {
    createSession: async (o) => {
      const body: Record<string, unknown> = {};
      if (o.lockdelay) body.LockDelay = o.lockdelay;
      if (o.name) body.Name = o.name;
      if (o.node) body.Node = o.node;
      if (o.checks) body.Checks = o.checks;
      if (o.behavior) body.Behavior = o.behavior;
      if (o.ttl) body.TTL = o.ttl;
      return okJson<{ ID: string }>(await c.put('/v1/session/create', body)).ID;
    },
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
      if (r.status === 404) {
        expectError(r, 404, 1006);
        return undefined;
      }
      return decoded(okJson<Entry[]>(r)[0]!);
    },
    getRecurse: async (key) => {
      const r = await c.get(`/v1/kv/${enc(key)}?recurse`);
      if (r.status === 404) {
        expectError(r, 404, 1006);
        return undefined;
      }
      return okJson<Entry[]>(r).map(decoded);
    },
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
    watch: (key, wait) => {
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
    },
  };
}

/** The rejection of a promise that must fail. */
async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail, it succeeded');
}

/** Consul-dialect plain-text error: status, Go's sniffed content type, exact body. */
function expectText(r: HttpResult, status: number, text: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toBe(textPlain);
  expect(r.text).toBe(text);
}

/** Consul-dialect JSON success: 200, `application/json` (no charset), exact body text when given. */
function expectJson(r: HttpResult, text?: string): void {
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get('content-type')).toBe('application/json');
  if (text !== undefined) expect(r.text).toBe(text);
}

function expectIndexHeaders(r: HttpResult): number {
  const index = r.headers.get('x-consul-index');
  expect(index).toMatch(/^[1-9][0-9]*$/);
  expect(r.headers.get('x-consul-knownleader')).toBe('true');
  expect(r.headers.get('x-consul-lastcontact')).toBe('0');
  return Number(index);
}

/** The exact Flags digits of a key, read from the raw response text (JSON.parse would round them). */
async function rawFlags(c: Raw, key: string): Promise<string> {
  const r = await c.get(`/v1/kv/${enc(key)}`);
  expect(r.status, r.text).toBe(200);
  const m = /"Flags":(\d+)/.exec(r.text);
  expect(m, r.text).not.toBeNull();
  return m![1]!;
}

/** Polls `cond` every 25 ms up to `maxMs`. */
async function until(cond: () => boolean, maxMs = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > maxMs) throw new Error('condition not reached in time');
    await sleep(25);
  }
}

// ------------------------------------------------------------------------------------------------
describe.each(['consul', 'seed'] as Dialect[])('%s dialect', (dialect) => {
  const isConsul = dialect === 'consul';
  let agent: Agent;
  let raw: Raw;
  let consul: any;
  let d: Driver;
  let seq = 0;
  const uniq = (name: string) => `ckv-${dialect}/${name}-${++seq}`;

  /**
   * Asserts the failure of a driver call in this dialect: consul → the client rejects with the plain-text body as its
   * message (papi: text/plain under 80 bytes, else the lower-cased status text) and the status; seed → the raw status
   * and error code. Calls that end in utils.body/empty (kv.set, kv.keys, session.*) reject with the bare message;
   * kv.get's own callback goes through papi's `next(err)`, which prefixes `consul: kv.get: ` (consul-compat §0 says
   * every call is prefixed).
   */
  async function expectFailure(p: Promise<unknown>, consulStatus: number, consulMessage: string, seedStatus: number, seedCode: number): Promise<any> {
    const err = await rejection(p);
    if (isConsul) {
      expect(err.message).toBe(consulMessage);
      expect(err.statusCode).toBe(consulStatus);
      return undefined;
    }
    expect(err).toBeInstanceOf(SeedHttpError);
    return expectError((err as SeedHttpError).r, seedStatus, seedCode);
  }

  /** Asserts a refused conditional write: consul `false`; seed 409 1025 with the reason. */
  function expectRefused(v: Verdict, seedReason?: string): void {
    expect(v.ok).toBe(false);
    if (!isConsul && seedReason !== undefined) expect(v.reason).toBe(seedReason);
  }

  beforeAll(async () => {
    agent = await startAgent({ args: isConsul ? ['--dialect', 'consul'] : [] });
    raw = client(agent);
    const u = new URL(agent.url);
    consul = new Consul({ host: '127.0.0.1', port: Number(u.port) } as any);
    d = isConsul ? consulDriver(consul) : seedDriver(agent.url, raw);
  });

  afterAll(async () => {
    consul?.destroy();
    await agent?.stop();
    agent?.cleanup();
  });

  // ----------------------------------------------------------------------------------------------
  describe('1. sessions', () => {
    test('create with every client option; info shows them, serfHealth comes back as gossipHealth', async () => {
      const name = uniq('every-option');
      const id = await d.createSession({ name, node: 'node1', lockdelay: '5s', checks: ['serfHealth'], behavior: 'delete', ttl: '30s' });
      expect(id).toMatch(uuidPattern);
      const s = await d.sessionInfo(id);
      expect(s).toBeDefined();
      expect(Object.keys(s!)).toEqual(sessionFieldOrder);
      expect(s).toMatchObject({
        ID: id, Name: name, Node: 'node1', LockDelay: 5_000_000_000, Behavior: 'delete', TTL: '30s',
        NodeChecks: ['gossipHealth'], ServiceChecks: null,
      });
      expect(s!.CreateIndex).toBe(s!.ModifyIndex);

      // Defaults for an empty body.
      const plain = await d.createSession({});
      expect(await d.sessionInfo(plain)).toMatchObject({
        ID: plain, Name: '', Node: 'node1', LockDelay: 15_000_000_000, Behavior: 'release', TTL: '', NodeChecks: ['gossipHealth'], ServiceChecks: null,
      });

      // Wire: create → 200 {"ID":"<uuid>"} as JSON; info → index headers.
      const r = await raw.put('/v1/session/create', { Name: uniq('wire') });
      expect(r.status, r.text).toBe(200);
      expect(r.text).toMatch(/^\{"ID":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"\}$/);
      if (isConsul) expectJson(r);
      const infoRaw = await raw.get(`/v1/session/info/${id}`);
      expect(infoRaw.status).toBe(200);
      expectIndexHeaders(infoRaw);
      if (isConsul) expectJson(infoRaw);
    });

    test('info of an unknown session: client undefined; wire 200 [] with index headers', async () => {
      expect(await d.sessionInfo(unknownSession)).toBeUndefined();
      const r = await raw.get(`/v1/session/info/${unknownSession}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe('[]');
      expectIndexHeaders(r);
      if (isConsul) expectJson(r, '[]');
    });

    test('node and list show the session; an unknown node has none', async () => {
      const id = await d.createSession({ name: uniq('listed') });
      const onNode = await d.sessionNode('node1');
      expect(onNode.map((s) => s.ID)).toContain(id);
      expect(onNode.every((s) => s.Node === 'node1')).toBe(true);
      const all = await d.sessionList();
      expect(all.map((s) => s.ID)).toContain(id);
      const ids = all.map((s) => s.ID);
      expect(ids).toEqual([...ids].sort());
      expect(await d.sessionNode('no-such-node')).toEqual([]);

      for (const path of ['/v1/session/node/node1', '/v1/session/list', '/v1/session/node/no-such-node']) {
        const r = await raw.get(path);
        expect(r.status, r.text).toBe(200);
        expectIndexHeaders(r);
        if (isConsul) expectJson(r);
      }
    });

    test('renew returns the unchanged record; renew of an unknown session fails', async () => {
      const id = await d.createSession({ ttl: '20s' });
      const before = (await d.sessionInfo(id))!;
      const renewed = await d.renew(id);
      expect(renewed).toHaveLength(1);
      expect(renewed[0]).toEqual(before);

      const body = await expectFailure(d.renew(unknownSession), 404, `Session id '${unknownSession}' not found`, 404, 1006);
      if (!isConsul) expect(typeof body.message).toBe('string');
      if (isConsul) expectText(await raw.put(`/v1/session/renew/${unknownSession}`), 404, `Session id '${unknownSession}' not found`);
    });

    test('destroy removes the session; destroying an unknown id answers true', async () => {
      const id = await d.createSession({ name: uniq('doomed') });
      await d.destroy(id);
      expect(await d.sessionInfo(id)).toBeUndefined();
      expect((await d.sessionList()).map((s) => s.ID)).not.toContain(id);
      await d.destroy(unknownSession);

      const r = await raw.put(`/v1/session/destroy/${unknownSession}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe('true');
      if (isConsul) expectJson(r, 'true');
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('2. KV', () => {
    test('set, get, keys, del', async () => {
      const key = uniq('basic');
      expect(await d.set(key, 'hello')).toEqual({ ok: true });
      const e = (await d.get(key))!;
      expect(Object.keys(e)).toEqual(entryFieldOrder);
      expect(e).toMatchObject({ Key: key, Value: 'hello', Flags: 0, LockIndex: 0 });
      expect(e.CreateIndex).toBe(e.ModifyIndex);
      expect(await d.keys(key)).toEqual([key]);

      // Overwrite keeps CreateIndex, bumps ModifyIndex; an empty value reads back as null.
      expect((await d.set(key, '')).ok).toBe(true);
      const e2 = (await d.get(key))!;
      expect(e2.Value).toBeNull();
      expect(e2.CreateIndex).toBe(e.CreateIndex);
      expect(e2.ModifyIndex).toBeGreaterThan(e.ModifyIndex);

      expect(await d.del(key)).toEqual({ ok: true });
      expect(await d.get(key)).toBeUndefined();
      expect((await d.del(key)).ok).toBe(true); // a missing key deletes fine

      // Wire: PUT → 200 true (JSON); GET → entry JSON with index = ModifyIndex.
      const put = await raw.put(`/v1/kv/${key}`, 'v');
      expect(put.status).toBe(200);
      expect(put.text).toBe('true');
      if (isConsul) expectJson(put, 'true');
      const got = await raw.get(`/v1/kv/${key}`);
      expect(got.status).toBe(200);
      expect(expectIndexHeaders(got)).toBe(got.json<Entry[]>()[0]!.ModifyIndex);
      expect(got.json<Entry[]>()[0]!.Value).toBe(Buffer.from('v').toString('base64'));
      if (isConsul) expectJson(got);
      const del = await raw.del(`/v1/kv/${key}`);
      expect(del.text).toBe('true');
      if (isConsul) expectJson(del, 'true');
    });

    test('recurse: string prefix, sorted by key; nothing under the prefix is a miss', async () => {
      const p = uniq('rec');
      for (const k of [`${p}/b`, `${p}/a`, `${p}x`]) expect((await d.set(k, k)).ok).toBe(true);
      const all = await d.getRecurse(p);
      expect(all!.map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`, `${p}x`]);
      expect(all!.map((e) => e.Value)).toEqual([`${p}/a`, `${p}/b`, `${p}x`]);
      expect((await d.getRecurse(`${p}/`))!.map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`]);
      expect(await d.getRecurse(`${p}/none`)).toBeUndefined();

      const miss = await raw.get(`/v1/kv/${p}/none?recurse`);
      expect(miss.status).toBe(404);
      expectIndexHeaders(miss);
      if (isConsul) expect(miss.text).toBe('');
      else expectError(miss, 404, 1006);
    });

    test('keys with and without a separator; an unmatched prefix is a 404', async () => {
      const p = `${uniq('sep')}/`;
      for (const k of ['a/x', 'a/y', 'b', 'c/z/w']) expect((await d.set(p + k, 'v')).ok).toBe(true);
      expect(await d.keys(p)).toEqual(['a/x', 'a/y', 'b', 'c/z/w'].map((k) => p + k));
      expect(await d.keys(p, '/')).toEqual(['a/', 'b', 'c/'].map((k) => p + k));

      await expectFailure(d.keys(`${p}none`), 404, 'not found', 404, 1006);
      const r = await raw.get(`/v1/kv/${p}none?keys`);
      expect(r.status).toBe(404);
      expectIndexHeaders(r);
      if (isConsul) expect(r.text).toBe('');
    });

    test('raw: the value bytes as a Buffer, text/plain', async () => {
      const key = uniq('raw');
      const bytes = Buffer.from([0x00, 0xff, 0x10, 0x7b, 0x22, 0x0a, 0xc3]);
      expect((await d.set(key, bytes)).ok).toBe(true);
      const got = await d.getRaw(key);
      expect(Buffer.isBuffer(got)).toBe(true);
      expect(got.equals(bytes)).toBe(true);

      const r = await raw.get(`/v1/kv/${key}?raw`);
      expect(r.status).toBe(200);
      expect(r.body.equals(bytes)).toBe(true);
      expect(r.headers.get('content-type')).toBe('text/plain');
      expect(r.headers.get('content-length')).toBe(String(bytes.length));
      expectIndexHeaders(r);
      if (isConsul) {
        expect(r.headers.get('x-content-type-options')).toBe('nosniff');
        expect(r.headers.get('content-security-policy')).toBe('sandbox');
      }
      // Decoded by the client from base64 back to the same bytes.
      const plain = await raw.get(`/v1/kv/${key}`);
      expect(Buffer.from(plain.json<Entry[]>()[0]!.Value!, 'base64').equals(bytes)).toBe(true);
    });

    test('flags: small through the client, uint64 exact on the raw text, absent flags reset to 0', async () => {
      const key = uniq('flags');
      expect((await d.set(key, 'v', { flags: 42 })).ok).toBe(true);
      expect((await d.get(key))!.Flags).toBe(42);

      expect((await d.set(key, 'v', { flags: lockFlags })).ok).toBe(true);
      expect(await rawFlags(raw, key)).toBe(lockFlags);

      const put = await raw.put(`/v1/kv/${key}?flags=${maxFlags}`, 'w');
      expect(put.status, put.text).toBe(200);
      expect(await rawFlags(raw, key)).toBe(maxFlags);
      const rec = await raw.get(`/v1/kv/${key}?recurse`);
      expect(rec.text).toContain(`"Flags":${maxFlags}`);

      expect((await d.set(key, 'plain')).ok).toBe(true);
      expect(await rawFlags(raw, key)).toBe('0');
    });

    test('cas: 0 creates only; N writes only at ModifyIndex N; DELETE ?cas likewise', async () => {
      const key = uniq('cas');
      expect((await d.set(key, 'one', { cas: 0 })).ok).toBe(true);
      expectRefused(await d.set(key, 'two', { cas: 0 }));
      const e = (await d.get(key))!;
      expect(e.Value).toBe('one');

      expectRefused(await d.set(key, 'two', { cas: e.ModifyIndex + 1000 }));
      expect((await d.set(key, 'two', { cas: e.ModifyIndex })).ok).toBe(true);
      expectRefused(await d.set(key, 'three', { cas: e.ModifyIndex })); // now stale
      const e2 = (await d.get(key))!;
      expect(e2.Value).toBe('two');

      expectRefused(await d.del(key, { cas: e.ModifyIndex }));
      expect((await d.get(key))!.Value).toBe('two');
      expect((await d.del(key, { cas: e2.ModifyIndex })).ok).toBe(true);
      expect(await d.get(key)).toBeUndefined();
      expect((await d.del(key, { cas: 12345 })).ok).toBe(true); // absent key

      // Wire of a failed CAS.
      expect((await d.set(key, 'x')).ok).toBe(true);
      const put = await raw.put(`/v1/kv/${key}?cas=0`, 'y');
      const del = await raw.del(`/v1/kv/${key}?cas=1`);
      for (const r of [put, del]) {
        if (isConsul) expectJson(r, 'false');
        else expectError(r, 409, 1025);
      }
    });

    test('acquire and release: holder, other session, re-acquire, release by non-holder, release of unlocked', async () => {
      const key = uniq('lock');
      const s1 = await d.createSession({ name: 's1' });
      const s2 = await d.createSession({ name: 's2' });

      expect((await d.set(key, 'a', { acquire: s1, flags: 7 })).ok).toBe(true);
      const held = (await d.get(key))!;
      expect(Object.keys(held)).toEqual(lockedEntryFieldOrder);
      expect(held).toMatchObject({ LockIndex: 1, Session: s1, Value: 'a', Flags: 7 });

      expectRefused(await d.set(key, 'b', { acquire: s2 }), 'held-by-other');
      expect((await d.get(key))!).toMatchObject({ Session: s1, Value: 'a' });
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?acquire=${s2}`, 'b'), 'false');

      expect((await d.set(key, 'a2', { acquire: s1, flags: 7 })).ok).toBe(true);
      expect((await d.get(key))!).toMatchObject({ LockIndex: 1, Session: s1, Value: 'a2' });

      expectRefused(await d.set(key, 'b', { release: s2 }), 'not-holder');
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?release=${s2}`, 'b'), 'false');

      const before = (await d.get(key))!;
      expect((await d.set(key, 'released', { release: s1, flags: 9 })).ok).toBe(true);
      const after = (await d.get(key))!;
      expect(after.Session).toBeUndefined();
      expect(Object.keys(after)).toEqual(entryFieldOrder);
      expect(after).toMatchObject({ LockIndex: 1, Value: 'released', Flags: 9 });
      expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);

      expectRefused(await d.set(key, 'x', { release: s1 }), 'not-locked');
      // Explicit release arms no lock-delay: the other session takes it at once.
      expect((await d.set(key, 'b', { acquire: s2 })).ok).toBe(true);
      expect((await d.get(key))!).toMatchObject({ LockIndex: 2, Session: s2 });

      // Release on an absent key: refused.
      expectRefused(await d.set(uniq('absent'), 'x', { release: s1 }));
      await d.destroy(s1);
      await d.destroy(s2);
    });

    test('lock-delay: after the holder is destroyed, a fresh session cannot acquire within the delay', async () => {
      const key = uniq('delay');
      const holder = await d.createSession({ lockdelay: '30s' });
      expect((await d.set(key, 'h', { acquire: holder })).ok).toBe(true);
      await d.destroy(holder);
      expect((await d.get(key))!.Session).toBeUndefined();

      const fresh = await d.createSession({});
      expectRefused(await d.set(key, 'f', { acquire: fresh }), 'lock-delay');
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?acquire=${fresh}`, 'f'), 'false');
      else expect(expectError(await raw.put(`/v1/kv/${key}?acquire=${fresh}`, 'f'), 409, 1025).message).toBe('did not acquire lock');
      // Plain writes are not blocked by the delay.
      expect((await d.set(key, 'plain')).ok).toBe(true);
      await d.destroy(fresh);
    });

    test('invalidation by destroy: Behavior release keeps the entry, Behavior delete removes it', async () => {
      const kr = uniq('beh-release');
      const kd = uniq('beh-delete');
      const rel = await d.createSession({ behavior: 'release' });
      const del = await d.createSession({ behavior: 'delete' });
      expect((await d.set(kr, 'kept', { acquire: rel, flags: 5 })).ok).toBe(true);
      expect((await d.set(kd, 'gone', { acquire: del })).ok).toBe(true);
      const before = (await d.get(kr))!;

      await d.destroy(rel);
      await d.destroy(del);

      const after = (await d.get(kr))!;
      expect(after.Session).toBeUndefined();
      expect(after).toMatchObject({ Value: 'kept', Flags: 5, LockIndex: before.LockIndex, CreateIndex: before.CreateIndex });
      expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
      expect(await d.get(kd)).toBeUndefined();
    });

    test('delete recurse removes every key starting with the prefix', async () => {
      const p = uniq('delrec');
      const other = uniq('delrec-keep');
      for (const k of [`${p}/a`, `${p}/b/c`, `${p}x`, other]) expect((await d.set(k, 'v')).ok).toBe(true);
      expect((await d.del(p, { recurse: true })).ok).toBe(true);
      expect(await d.getRecurse(p)).toBeUndefined();
      expect(await d.get(`${p}x`)).toBeUndefined();
      expect((await d.get(other))!.Value).toBe('v');
    });

    test('missing key: client undefined; wire 404 with index headers', async () => {
      const key = uniq('missing');
      expect(await d.get(key)).toBeUndefined();
      const r = await raw.get(`/v1/kv/${key}`);
      expect(r.status).toBe(404);
      expectIndexHeaders(r);
      if (isConsul) expect(r.text).toBe('');
      else expectError(r, 404, 1006);
    });

    test('acquire with an unknown session', async () => {
      const key = uniq('unknown-session');
      const body = await expectFailure(d.set(key, 'v', { acquire: unknownSession }), 500, `invalid session "${unknownSession}"`, 400, 1007);
      if (!isConsul) expect(body.message).toBe(`invalid session "${unknownSession}"`);
      if (isConsul) expectText(await raw.put(`/v1/kv/${key}?acquire=${unknownSession}`, 'v'), 500, `invalid session "${unknownSession}"`);
      expect(await d.get(key)).toBeUndefined();
    });

    test('acquire with an empty session id', async () => {
      const key = uniq('empty-session');
      await expectFailure(d.set(key, 'v', { acquire: '' }), 500, 'missing session', 400, 1008);
      if (isConsul) {
        expectText(await raw.put(`/v1/kv/${key}?acquire=`, 'v'), 500, 'missing session');
        expectText(await raw.put(`/v1/kv/${key}?release=`, 'v'), 500, 'missing session');
      } else {
        expectError(await raw.put(`/v1/kv/${key}?release=`, 'v'), 400, 1008);
      }
      expect(await d.get(key)).toBeUndefined();
    });

    test('conflicting flags: more than one of cas, acquire, release', async () => {
      const key = uniq('conflict');
      const s = await d.createSession({});
      const text = `Conflicting flags: acquire=${s}&cas=0\n`;
      await expectFailure(d.set(key, 'v', { cas: 0, acquire: s }), 400, text, 400, 1009);
      const r = await raw.put(`/v1/kv/${key}?cas=0&acquire=${s}`, 'v');
      if (isConsul) expectText(r, 400, text);
      else expectError(r, 400, 1009);
      const r2 = await raw.put(`/v1/kv/${key}?release=${s}&acquire=${s}`, 'v');
      if (isConsul) expectText(r2, 400, `Conflicting flags: acquire=${s}&release=${s}\n`);
      else expectError(r2, 400, 1009);
      expect(await d.get(key)).toBeUndefined();

      // DELETE: recurse and cas together (the seed spec names no code for this one; 400 with an error body).
      expect((await d.set(`${key}/x`, 'v')).ok).toBe(true);
      const delText = 'Conflicting flags: cas=0&recurse=true\n';
      const delErr = await rejection(d.del(key, { recurse: true, cas: 0 }));
      const rd = await raw.del(`/v1/kv/${key}?recurse=true&cas=0`);
      if (isConsul) {
        expect(delErr.message).toBe(delText);
        expect(delErr.statusCode).toBe(400);
        expectText(rd, 400, delText);
        expectText(await raw.del(`/v1/kv/${key}?recurse&cas=0`), 400, 'Conflicting flags: cas=0&recurse=\n');
      } else {
        expect((delErr as SeedHttpError).r.status).toBe(400);
        expect(rd.status).toBe(400);
        expect(typeof rd.json().code).toBe('number');
      }
      expect((await d.get(`${key}/x`))!.Value).toBe('v');
      await d.destroy(s);
    });

    test('bad flags', async () => {
      const key = uniq('badflags');
      const text = 'strconv.ParseUint: parsing "abc": invalid syntax';
      await expectFailure(d.set(key, 'v', { flags: 'abc' }), 500, text, 400, 1009);
      const r = await raw.put(`/v1/kv/${key}?flags=abc`, 'v');
      if (isConsul) expectText(r, 500, text);
      else expectError(r, 400, 1009);
      expect(await d.get(key)).toBeUndefined();
    });

    test(`a value of ${kvValueMaxBytes} bytes is stored; one byte more is 413`, async () => {
      const key = uniq('big');
      expect((await d.set(key, Buffer.alloc(kvValueMaxBytes, 0x61))).ok).toBe(true);
      expect((await d.getRaw(key)).length).toBe(kvValueMaxBytes);

      const tooBig = Buffer.alloc(kvValueMaxBytes + 1, 0x62);
      await expectFailure(d.set(key, tooBig), 413, 'payload too large', 413, 1011);
      const r = await raw.put(`/v1/kv/${key}`, tooBig);
      expect(r.status).toBe(413);
      if (isConsul) {
        expect(r.headers.get('content-type')).toBe(textPlain);
        expect(r.text.startsWith(`Request body(${kvValueMaxBytes + 1} bytes) too large, max size: ${kvValueMaxBytes} bytes. See `)).toBe(true);
      } else {
        expectError(r, 413, 1011);
      }
      expect((await d.getRaw(key)).length).toBe(kvValueMaxBytes);
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('3. blocking reads and consistency', () => {
    test('watch: a change on create and on each write, indexes increase, end() stops it', async () => {
      const key = uniq('watched');
      const w = d.watch(key, '2s');
      try {
        await until(() => w.changes.length >= 1);
        expect(w.changes[0]!.entry).toBeUndefined(); // missing key: the first answer is the 404's index

        for (const [i, v] of ['v1', 'v2', 'v3'].entries()) {
          expect((await d.set(key, v)).ok).toBe(true);
          await until(() => w.changes.length >= i + 2);
          expect(w.changes[i + 1]!.entry).toMatchObject({ Key: key, Value: v });
        }
        const indexes = w.changes.map((c) => c.index);
        for (let i = 1; i < indexes.length; i++) expect(indexes[i]!).toBeGreaterThan(indexes[i - 1]!);
        expect(w.changes.at(-1)!.index).toBe((await d.get(key))!.ModifyIndex);
        // A write to another key does not count as a change of this one.
        expect((await d.set(uniq('unrelated'), 'x')).ok).toBe(true);
      } finally {
        w.end();
      }
      expect(w.ended()).toBe(true);
      const seen = w.changes.length;
      expect(seen).toBe(4);
      expect((await d.set(key, 'after-end')).ok).toBe(true);
      await sleep(300);
      expect(w.changes.length).toBe(seen);
      expect(w.errors).toEqual([]);
    });

    test('raw blocking GET: wakes on a write with the new index; times out with the same index', async () => {
      const key = uniq('raw-block');
      expect((await d.set(key, 'a')).ok).toBe(true);
      const first = await raw.get(`/v1/kv/${key}`);
      const i0 = expectIndexHeaders(first);
      const parked = raw.get(`/v1/kv/${key}?index=${i0}&wait=5s`);
      await sleep(150);
      expect((await d.set(key, 'b')).ok).toBe(true);
      const woke = await parked;
      expect(woke.status).toBe(200);
      expect(expectIndexHeaders(woke)).toBeGreaterThan(i0);
      expect(woke.json<Entry[]>()[0]!.Value).toBe(Buffer.from('b').toString('base64'));

      const i1 = expectIndexHeaders(woke);
      const idle = await raw.get(`/v1/kv/${key}?index=${i1}&wait=300ms`);
      expect(idle.status).toBe(200);
      expect(expectIndexHeaders(idle)).toBe(i1);

      // The blocking read of the driver (the client with index+wait in consul).
      const r = await d.read(key, i1, '300ms');
      expect(r.index).toBe(i1);
      expect(r.entry!.Value).toBe('b');
    });

    test('?stale and ?consistent answer; both together, bad max_stale, bad index and wait are 400', async () => {
      const key = uniq('consistency');
      expect((await d.set(key, 'c')).ok).toBe(true);
      expect((await d.get(key, { stale: true }))!.Value).toBe('c');
      expect((await d.get(key, { consistent: true }))!.Value).toBe('c');
      for (const q of ['stale', 'consistent', 'stale=1', 'consistent=1', 'max_stale=5s', 'stale&max_stale=1m', 'leader']) {
        const r = await raw.get(`/v1/kv/${key}?${q}`);
        expect(r.status, `${q}: ${r.text}`).toBe(200);
        expectIndexHeaders(r);
      }

      const both = await raw.get(`/v1/kv/${key}?stale&consistent`);
      const maxStale = await raw.get(`/v1/kv/${key}?max_stale=abc`);
      const badIndex = await raw.get(`/v1/kv/${key}?index=abc`);
      const badWait = await raw.get(`/v1/kv/${key}?index=1&wait=abc`);
      if (isConsul) {
        expectText(both, 400, 'Cannot specify ?stale with ?consistent, conflicting semantics.');
        expectText(maxStale, 400, 'Invalid max_stale value "abc"');
        expectText(badIndex, 400, 'Invalid index');
        expectText(badWait, 400, 'Invalid wait time');
      } else {
        expectError(both, 400, 1009);
        expectError(maxStale, 400, 1009);
        expect(expectError(badIndex, 400, 1009).details).toHaveProperty('index');
        expect(expectError(badWait, 400, 1009).details).toHaveProperty('wait');
      }
    });

    test('?dc: own datacenter answers, another one fails', async () => {
      const key = uniq('dc');
      expect((await d.set(key, 'd')).ok).toBe(true);
      expect((await d.get(key, { dc: 'dc1' }))!.Value).toBe('d');
      // kv.get rejects through papi's `next(err)` path, which prefixes `consul: kv.get:`.
      await expectFailure(d.get(key, { dc: 'other' }), 500, 'consul: kv.get: No path to datacenter', 503, 1016);
      const r = await raw.get(`/v1/kv/${key}?dc=other`);
      if (isConsul) expectText(r, 500, 'No path to datacenter');
      else expectError(r, 503, 1016);
      const put = await raw.put(`/v1/kv/${key}?dc=other`, 'z');
      if (isConsul) expectText(put, 500, 'No path to datacenter');
      else expectError(put, 503, 1016);
      expect((await d.get(key))!.Value).toBe('d');
    });

    test('tokens are accepted and ignored: ?token=, X-Consul-Token, Authorization: Bearer', async () => {
      const key = uniq('token');
      expect((await d.set(key, 't')).ok).toBe(true);
      expect((await d.get(key, { token: 'x' }))!.Value).toBe('t');
      for (const [path, headers] of [
        [`/v1/kv/${key}?token=x`, {}],
        [`/v1/kv/${key}`, { 'X-Consul-Token': 'x' }],
        [`/v1/kv/${key}`, { Authorization: 'Bearer x' }],
      ] as [string, Record<string, string>][]) {
        const r = await raw.get(path, headers);
        expect(r.status, `${path} ${JSON.stringify(headers)}: ${r.text}`).toBe(200);
        if (isConsul) expectJson(r);
      }
      const put = await raw.put(`/v1/kv/${key}?token=x`, 'u', { 'X-Consul-Token': 'x' });
      expect(put.status, put.text).toBe(200);
      expect(put.text).toBe('true');
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('4. the lock recipe (consul-compat §3.2 Go helper / §6 node-consul 0.40)', () => {
    const lockWait = '5s';
    /** The Go helper waits 5 s after a lock-delay refusal; shortened for the test. */
    const retryAfterDelayMs = 200;
    /** Each loop of the recipe is bounded. */
    const attemptsMax = 100;

    /** One contender: a TTL session renewed periodically, blocking reads until unlocked, acquire with the helper's flags. */
    class Contender {
      sid = '';
      renewals = 0;
      renewErrors: unknown[] = [];
      /** Why acquires were refused: 'held' (someone holds it) or 'delay' (unlocked but refused: lock-delay). */
      refusals: ('held' | 'delay')[] = [];
      seedReasons: (string | undefined)[] = [];
      /** Reads that found the key held by someone. */
      sawHeld = 0;
      private timer: NodeJS.Timeout | undefined;
      constructor(readonly name: string, readonly key: string) {}

      async open(): Promise<void> {
        this.sid = await d.createSession({ name: this.name, ttl: '15s', lockdelay: '1s' });
        expect((await d.renew(this.sid))[0]!.ID).toBe(this.sid);
        this.timer = setInterval(() => {
          d.renew(this.sid).then(() => { this.renewals++; }, (err) => { this.renewErrors.push(err); });
        }, 500);
      }

      stopRenewing(): void {
        clearInterval(this.timer);
      }

      async lock(): Promise<void> {
        let index = 0;
        for (let attempt = 0; attempt < attemptsMax; attempt++) {
          // WAIT: block until the key has no Session.
          let r = await d.read(this.key, index, lockWait);
          for (let n = 0; r.entry?.Session; n++) {
            if (n >= attemptsMax) throw new Error(`${this.name}: lock never freed`);
            this.sawHeld++;
            r = await d.read(this.key, r.index, lockWait);
          }
          if (r.entry && (await rawFlags(raw, this.key)) !== lockFlags) throw new Error('Existing key does not match lock use');
          const v = await d.set(this.key, this.name, { flags: lockFlags, acquire: this.sid });
          if (v.ok) return;
          this.seedReasons.push(v.reason);
          // Why did it fail? Held → long-poll on its index; unlocked → lock-delay, timed retry.
          const again = await d.read(this.key, 0, lockWait);
          if (again.entry?.Session) {
            this.sawHeld++;
            this.refusals.push('held');
            index = again.index;
          } else {
            this.refusals.push('delay');
            index = 0;
            await sleep(retryAfterDelayMs);
          }
        }
        throw new Error(`${this.name}: lock not acquired in ${attemptsMax} attempts`);
      }

      async unlock(): Promise<void> {
        expect((await d.set(this.key, this.name, { flags: lockFlags, release: this.sid })).ok).toBe(true);
      }

      async close(): Promise<void> {
        this.stopRenewing();
        await d.destroy(this.sid);
      }
    }

    test('three contenders take the lock in turn: never two holders, LockIndex +1 per acquisition, flags exact', async () => {
      const key = uniq('recipe');
      const contenders = ['alpha', 'beta', 'gamma'].map((n) => new Contender(n, key));
      await Promise.all(contenders.map((c) => c.open()));
      const holders = new Set<string>();
      let overlaps = 0;
      const lockIndexes: number[] = [];
      const order: string[] = [];
      const rounds = 2;

      const run = async (c: Contender) => {
        for (let i = 0; i < rounds; i++) {
          await c.lock();
          if (holders.size > 0) overlaps++;
          holders.add(c.name);
          order.push(c.name);
          const e = (await d.get(key))!;
          expect(e).toMatchObject({ Session: c.sid, Value: c.name });
          lockIndexes.push(e.LockIndex);
          expect(await rawFlags(raw, key)).toBe(lockFlags);
          await sleep(40);
          holders.delete(c.name);
          await c.unlock();
        }
      };
      await Promise.all(contenders.map(run));

      expect(overlaps).toBe(0);
      expect(lockIndexes).toEqual(Array.from({ length: contenders.length * rounds }, (_, i) => i + 1));
      for (const c of contenders) expect(order.filter((n) => n === c.name)).toHaveLength(rounds);
      // Contention happened: someone found the lock held (refused, or parked on a blocking read).
      expect(contenders.reduce((n, c) => n + c.sawHeld, 0)).toBeGreaterThan(0);
      if (!isConsul) {
        for (const c of contenders) for (const r of c.seedReasons) expect(['held-by-other', 'lock-delay']).toContain(r);
      }

      const last = (await d.get(key))!;
      expect(last.Session).toBeUndefined();
      expect(last.LockIndex).toBe(contenders.length * rounds);
      expect(await rawFlags(raw, key)).toBe(lockFlags);
      for (const c of contenders) {
        c.stopRenewing();
        expect(c.renewErrors).toEqual([]);
        await c.close();
      }
    });

    test('a holder whose session is destroyed loses the lock to the next contender after the lock-delay', async () => {
      const key = uniq('recipe-loss');
      const a = new Contender('holder', key);
      const b = new Contender('next', key);
      await a.open();
      await b.open();
      await a.lock();
      const heldByA = (await d.get(key))!;
      expect(heldByA).toMatchObject({ Session: a.sid, LockIndex: 1 });

      const waiting = b.lock();
      await sleep(300); // let b park on its blocking read
      const t0 = Date.now();
      await a.close(); // destroy: the lock is released by invalidation, lock-delay 1s armed
      await waiting;
      const elapsedMs = Date.now() - t0;

      expect(elapsedMs).toBeGreaterThanOrEqual(950); // never before the lock-delay (1s) has passed
      expect(b.refusals).toContain('delay');
      if (!isConsul) expect(b.seedReasons).toContain('lock-delay');
      const e = (await d.get(key))!;
      expect(e).toMatchObject({ Session: b.sid, Value: 'next', LockIndex: 2 });
      expect(await rawFlags(raw, key)).toBe(lockFlags);

      // The dead session's release is refused; it holds nothing.
      expectRefused(await d.set(key, 'holder', { flags: lockFlags, release: a.sid }), 'not-holder');
      await b.unlock();
      expect((await d.get(key))!.Session).toBeUndefined();
      expect(b.renewErrors).toEqual([]);
      await b.close();
    });
  });
});
