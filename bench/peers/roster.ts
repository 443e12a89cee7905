/**
 * Roster (and any Consul-compatible server) driven over HTTP: one keep-alive undici Pool per node, one
 * session per client (`{"LockDelay":"0s"}`, so a release followed by a re-acquire never meets a lock
 * delay), acquire `PUT /v1/kv/<key>?acquire=<sid>`, release `PUT /v1/kv/<key>?release=<sid>`.
 *
 * Contention, three ways: `retry` tries again at once (bench:locks measures the server's refusal path that
 * way); `wait` is the Consul lock recipe (Consul's api/lock.go): after a refusal, read the key and, while a
 * session holds it, block on `GET /v1/kv/<key>?index=<X-Consul-Index>&wait=…` until the index moves and
 * the holder is gone; then try again. `queue` is Roster's own: `PUT ?acquire=<sid>&wait=…` waits in the
 * server's FIFO for the key and answers once it holds the lock (or the wait ran out).
 *
 * Batches: `PUT /v1/txn` with a `lock` operation per key (all held, 200, or none, 409), then one with an
 * `unlock` per key.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { BatchLocks, LockDriver, LockOutcome } from './driver.ts';
import { txnOpsMax } from '../../src/domain/limits.ts';

/** A request with no answer for this long fails instead of hanging the bench. */
const requestTimeoutMs = 10_000;
/** Longest single blocking read; well inside the request timeout (Roster adds up to wait/16 of jitter). */
const blockingWaitMsMax = 5_000;
const acquireBody = 'bench-holder';
const acquireValue = Buffer.from(acquireBody).toString('base64');

export interface Answer { status: number; text: string; index: number | undefined }

export class RosterHttp {
  readonly pool: Pool;
  constructor(readonly base: string, connections: number) {
    this.pool = new Pool(base, {
      connections, pipelining: 1,
      keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000,
      headersTimeout: requestTimeoutMs, bodyTimeout: requestTimeoutMs, connectTimeout: requestTimeoutMs,
    });
  }
  async request(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: string): Promise<Answer> {
    const res = await this.pool.request({ method, path, ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}) });
    const index = res.headers['x-consul-index'];
    return { status: res.statusCode, text: await res.body.text(), index: typeof index === 'string' ? Number(index) : undefined };
  }
  close(): Promise<void> {
    return this.pool.close();
  }
}

export const describeAnswer = (what: string, a: Answer) => `${what}: HTTP ${a.status} ${a.text.trim().slice(0, 200)}`;

/** What an acquire answered: held, refused because someone else holds it, or something unexpected. */
export function acquireOutcome(a: Answer): 'held' | 'refused' | 'unexpected' {
  const body = a.text.trim();
  if (a.status === 200 && body === 'true') return 'held';
  if (a.status === 200 && body === 'false') return 'refused'; // consul dialect
  if (a.status === 409) {
    try {
      if ((JSON.parse(body) as { code?: unknown }).code === 1025) return 'refused'; // seed dialect
    } catch { /* not JSON: unexpected */ }
  }
  return 'unexpected';
}

export interface RosterDriverOptions {
  /** @default 'roster' */
  name?: string;
  /** Base URLs of the nodes; client c talks to node c mod n. */
  urls: string[];
  /** Connections per node: the most clients that will talk to one node at once. */
  connectionsPerNode: number;
  contention: 'retry' | 'wait' | 'queue';
  /** Whether the server has `PUT /v1/txn` for the txn rows. @default true */
  batches?: boolean;
}

export class RosterDriver implements LockDriver {
  readonly name: string;
  private readonly nodes: RosterHttp[];
  private sessions: string[] = [];
  private readonly written = new Set<string>();

  /** Batches through `PUT /v1/txn`: one request locks a client's keys, one unlocks them. */
  readonly batch: BatchLocks | undefined;
  /** A client's lock and unlock bodies for its batch of keys, made once: the bench's own CPU is not the point. */
  private txnBodies = new WeakMap<readonly string[], { lock: string; unlock: string }>();

  constructor(private readonly o: RosterDriverOptions) {
    this.name = o.name ?? 'roster';
    this.nodes = o.urls.map((u) => new RosterHttp(u, o.connectionsPerNode));
    this.batch = o.batches === false ? undefined : {
      max: txnOpsMax,
      acquireAll: (client, keys) => this.acquireAll(client, keys),
      releaseAll: (client, keys) => this.releaseAll(client, keys),
    };
  }

  private node(client: number): RosterHttp {
    return this.nodes[client % this.nodes.length]!;
  }

  async setup(keys: readonly string[]): Promise<void> {
    for (let c = 0; c < keys.length; c++) {
      const a = await this.node(c).request('PUT', '/v1/session/create', JSON.stringify({ LockDelay: '0s', Name: `bench-${c}` }));
      if (a.status !== 200) throw new Error(describeAnswer('session create', a));
      const id = (JSON.parse(a.text) as { ID?: unknown }).ID;
      if (typeof id !== 'string' || id === '') throw new Error(describeAnswer('session create returned no ID', a));
      this.sessions.push(id);
    }
    for (const k of keys) this.written.add(k);
  }

  private acquire(client: number, key: string, waitMs?: number): Promise<Answer> {
    const wait = waitMs === undefined ? '' : `&wait=${Math.ceil(waitMs)}ms`;
    return this.node(client).request('PUT', `/v1/kv/${key}?acquire=${this.sessions[client]}${wait}`, acquireBody);
  }

  async tryAcquire(client: number, key: string): Promise<boolean> {
    const a = await this.acquire(client, key);
    const outcome = acquireOutcome(a);
    if (outcome === 'unexpected') throw new Error(describeAnswer('acquire', a));
    return outcome === 'held';
  }

  async lock(client: number, key: string, until: number, contended: () => void): Promise<LockOutcome> {
    for (;;) {
      const wonTryAt = performance.now();
      if (wonTryAt >= until) return { held: false, wonTryAt };
      const queued = this.o.contention === 'queue' ? Math.min(until - wonTryAt, blockingWaitMsMax) : undefined;
      const a = await this.acquire(client, key, queued);
      const outcome = acquireOutcome(a);
      if (outcome === 'held') return { held: true, wonTryAt };
      if (outcome === 'unexpected') throw new Error(describeAnswer('acquire', a));
      contended();
      if (this.o.contention === 'wait') await this.waitUntilFree(client, key, until);
    }
  }

  /**
   * The Consul recipe's wait: read the key; while a session holds it, block until its index moves past the
   * one seen. Returns when the key is free (or gone) or `until` passed.
   */
  private async waitUntilFree(client: number, key: string, until: number): Promise<void> {
    let index = 0;
    for (;;) {
      const left = until - performance.now();
      if (left <= 0) return;
      const query = index > 0 ? `?index=${index}&wait=${Math.ceil(Math.min(left, blockingWaitMsMax))}ms` : '';
      const a = await this.node(client).request('GET', `/v1/kv/${key}${query}`);
      if (a.status === 404) return;
      if (a.status !== 200) throw new Error(describeAnswer(`read ${key}`, a));
      const [entry] = JSON.parse(a.text) as { Session?: string }[];
      if (entry?.Session === undefined || entry.Session === '') return;
      // Consul's client rule: an index that went backwards (a restore) starts the wait over.
      index = a.index !== undefined && a.index >= index ? a.index : 0;
    }
  }

  private bodies(client: number, keys: readonly string[]): { lock: string; unlock: string } {
    let b = this.txnBodies.get(keys);
    if (b === undefined) {
      const session = this.sessions[client];
      b = {
        lock: JSON.stringify(keys.map((k) => ({ KV: { Verb: 'lock', Key: k, Value: acquireValue, Session: session } }))),
        unlock: JSON.stringify(keys.map((k) => ({ KV: { Verb: 'unlock', Key: k, Session: session } }))),
      };
      this.txnBodies.set(keys, b);
      for (const k of keys) this.written.add(k);
    }
    return b;
  }

  /** 200: every key held; 409: rolled back, some key held by another session (or a lock delay). */
  private async acquireAll(client: number, keys: readonly string[]): Promise<boolean> {
    const a = await this.node(client).request('PUT', '/v1/txn', this.bodies(client, keys).lock);
    if (a.status === 200) return true;
    if (a.status === 409) return false;
    throw new Error(describeAnswer(`txn lock of ${keys.length} keys`, a));
  }

  private async releaseAll(client: number, keys: readonly string[]): Promise<void> {
    const a = await this.node(client).request('PUT', '/v1/txn', this.bodies(client, keys).unlock);
    if (a.status !== 200) throw new Error(describeAnswer(`txn unlock of ${keys.length} keys`, a));
  }

  async release(client: number, key: string): Promise<void> {
    const a = await this.node(client).request('PUT', `/v1/kv/${key}?release=${this.sessions[client]}`);
    if (a.status !== 200 || a.text.trim() !== 'true') throw new Error(describeAnswer('release', a));
  }

  /** Destroying a session releases what it still holds; the keys themselves are removed by close(). */
  async teardown(): Promise<void> {
    const failures: string[] = [];
    for (const [c, id] of this.sessions.entries()) {
      try {
        const a = await this.node(c).request('PUT', `/v1/session/destroy/${encodeURIComponent(id)}`);
        if (a.status !== 200) failures.push(describeAnswer(`session destroy ${id}`, a));
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
    }
    this.sessions = [];
    this.txnBodies = new WeakMap();
    if (failures.length > 0) throw new Error(`${failures.length} session destroys failed, first: ${failures[0]}`);
  }

  /** Deletes every key a row used (a bench may run against a server others use), 64 at once, then closes the pools. */
  async close(): Promise<void> {
    try {
      const keys = [...this.written];
      for (let i = 0; i < keys.length; i += txnOpsMax) {
        await Promise.all(keys.slice(i, i + txnOpsMax).map(async (k) => {
          const a = await this.nodes[0]!.request('DELETE', `/v1/kv/${k}`);
          if (a.status !== 200) throw new Error(describeAnswer(`delete ${k}`, a));
        }));
      }
    } finally {
      this.written.clear();
      await this.disconnect();
    }
  }

  /** Closes the pools only (an interrupted run: the server may be gone, and the keys do not matter). */
  async disconnect(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.close().catch(() => {})));
  }
}
