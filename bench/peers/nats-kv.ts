/**
 * NATS KV as a peer: a bucket (history 1, file storage; R1 on one nats-server, R3 on three) driven with
 * the @nats-io/kv client, one connection per server.
 *
 * Recipe (compare-and-set on the key's revision, which is the stream sequence of its last message):
 *   acquire  create(key) for a key never seen, else update(key, value, <revision of its delete marker>):
 *            the write is refused unless the key's last message is still that marker.
 *   release  a delete marker with Nats-Expected-Last-Subject-Sequence = the revision of our own write,
 *            which is what kv.delete(key, {previousSeq}) sends; it is published here directly so the
 *            marker's revision comes back in the ack and the next acquire is one CAS. (kv.create after a
 *            delete costs three round trips: a refused create, a get of the marker, an update.)
 *   shared   each client watches the key; while the newest entry is a PUT (held) it waits for the next
 *            entry; on a delete marker it CASes against the marker's revision; a refused CAS waits for
 *            the watch to move past the revision it tried.
 */
import { connect, Empty, headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, JetStreamApiCodes, JetStreamApiError, PubHeaders, StorageType, type JetStreamClient, type PubAck } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { performance } from 'node:perf_hooks';
import { within, type LockDriver, type LockOutcome, type Scenario } from './driver.ts';

/** A request with no answer for this long fails instead of hanging the bench. */
const requestTimeoutMs = 10_000;
const bucket = 'roster_bench';
/** The KV operation header (NATS ADR-8): a message carrying it marks a key deleted. */
const kvOperationHeader = 'KV-Operation';
const holderValue = 'bench-holder';

interface Entry { op: 'PUT' | 'DEL' | 'PURGE'; revision: number }

/** The newest entry of one key as a watch delivers it, and a way to wait for a newer one. */
class KeyView {
  latest: Entry | undefined;
  /** Set when the watch broke: waiting on it would only run into the deadline, so waits fail instead. */
  private broken: Error | undefined;
  private readonly waiters = new Set<() => void>();
  private stopWatch: (() => void) | undefined;

  static async open(kv: KV, key: string): Promise<KeyView> {
    const view = new KeyView();
    const iter = await within('nats kv watch', requestTimeoutMs, kv.watch({ key, headers_only: true }));
    view.stopWatch = () => iter.stop();
    void (async () => {
      for await (const e of iter) {
        view.latest = { op: e.operation, revision: e.revision };
        for (const wake of view.waiters) wake();
      }
    })().then(
      () => { view.broken ??= new Error(`nats kv watch on ${key} ended`); },
      (err: unknown) => { view.broken = err instanceof Error ? err : new Error(String(err)); },
    ).finally(() => { for (const wake of view.waiters) wake(); });
    return view;
  }

  /** Resolves true once an entry newer than `revision` arrived, false when `until` passed first. */
  newerThan(revision: number, until: number): Promise<boolean> {
    if ((this.latest?.revision ?? 0) > revision) return Promise.resolve(true);
    if (this.broken !== undefined) return Promise.reject(this.broken);
    return new Promise((res, rej) => {
      const done = (v: boolean) => { clearTimeout(timer); this.waiters.delete(wake); res(v); };
      const wake = () => {
        if ((this.latest?.revision ?? 0) > revision) done(true);
        else if (this.broken !== undefined) { clearTimeout(timer); this.waiters.delete(wake); rej(this.broken); }
      };
      const timer = setTimeout(() => done(false), Math.max(0, until - performance.now()));
      this.waiters.add(wake);
    });
  }

  stop(): void {
    this.broken ??= new Error('watch stopped');
    this.stopWatch?.();
  }
}

function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}

export class NatsKvDriver implements LockDriver {
  /**
   * Per client and key, the newest message that client wrote itself (a delete marker after a release): a
   * client knows no more than a separate process would, only what its own acks told it.
   */
  private readonly lastWritten = new Map<string, Entry>();
  /** Revision of the write each client holds its lock by. */
  private held: number[] = [];
  private views: (KeyView | undefined)[] = [];

  private constructor(readonly name: string, private readonly conns: NatsConnection[], private readonly kvs: KV[], private readonly js: JetStreamClient[]) {}

  /** Connects once to each server and creates the bucket with `replicas`. */
  static async open(name: string, urls: string[], replicas: number): Promise<NatsKvDriver> {
    const conns: NatsConnection[] = [];
    try {
      for (const u of urls) conns.push(await connect({ servers: u, timeout: requestTimeoutMs }));
      const js = conns.map((nc) => jetstream(nc, { timeout: requestTimeoutMs }));
      const first = await new Kvm(js[0]!).create(bucket, { history: 1, storage: StorageType.File, replicas });
      const kvs = [first, ...await Promise.all(js.slice(1).map((j) => new Kvm(j).open(bucket)))];
      return new NatsKvDriver(name, conns, kvs, js);
    } catch (err) {
      await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
      throw err;
    }
  }

  private kv(client: number): KV {
    return this.kvs[client % this.kvs.length]!;
  }

  /** On the shared key every client watches it (the recipe's way to wait); distinct keys need no watch. */
  async setup(keys: readonly string[], scenario: Scenario): Promise<void> {
    this.held = keys.map(() => 0);
    const opened = await Promise.allSettled(keys.map((k, c) => (scenario === 'shared' ? KeyView.open(this.kv(c), k) : Promise.resolve(undefined))));
    // Keep the ones that opened, so teardown stops them when another failed.
    this.views = opened.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    const failed = opened.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  /** One CAS: create when the key was never written by us, else replace the marker we know of. */
  private async cas(client: number, key: string, revision: number | undefined): Promise<boolean> {
    try {
      const rev = revision === undefined || revision === 0
        ? await this.kv(client).create(key, holderValue)
        : await this.kv(client).update(key, holderValue, revision);
      this.held[client] = rev;
      this.lastWritten.set(`${client} ${key}`, { op: 'PUT', revision: rev });
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  tryAcquire(client: number, key: string): Promise<boolean> {
    return this.cas(client, key, this.lastWritten.get(`${client} ${key}`)?.revision);
  }

  async lock(client: number, key: string, until: number, contended: () => void): Promise<LockOutcome> {
    const view = this.views[client];
    if (view === undefined) throw new Error(`nats kv: client ${client} has no watch on ${key} (lock outside the shared scenario)`);
    for (;;) {
      const wonTryAt = performance.now();
      if (wonTryAt >= until) return { held: false, wonTryAt };
      // What this client wrote itself may be newer than what its watch delivered so far.
      const written = this.lastWritten.get(`${client} ${key}`);
      const seen = written !== undefined && written.revision > (view.latest?.revision ?? 0) ? written : view.latest;
      if (seen?.op === 'PUT') {
        contended();
        if (!(await view.newerThan(seen.revision, until))) return { held: false, wonTryAt };
        continue;
      }
      if (await this.cas(client, key, seen?.revision)) return { held: true, wonTryAt };
      contended();
      if (!(await view.newerThan(seen?.revision ?? 0, until))) return { held: false, wonTryAt };
    }
  }

  async release(client: number, key: string): Promise<void> {
    const h = headers();
    h.set(kvOperationHeader, 'DEL');
    h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(this.held[client]));
    let ack: PubAck;
    try {
      ack = await this.js[client % this.js.length]!.publish(`$KV.${bucket}.${key}`, Empty, { headers: h });
    } catch (err) {
      // Only another write since ours can move the key's last sequence: the CAS let a second client in.
      if (isWrongLastSequence(err)) throw new Error(`release refused (${(err as Error).message}): another client wrote the key while this one held it, two holders at once`);
      throw err;
    }
    this.lastWritten.set(`${client} ${key}`, { op: 'DEL', revision: ack.seq });
    this.held[client] = 0;
  }

  async teardown(): Promise<void> {
    for (const v of this.views) v?.stop();
    this.views = [];
    this.held = [];
  }

  async close(): Promise<void> {
    try {
      await within('nats kv destroy', requestTimeoutMs, this.kvs[0]!.destroy());
    } finally {
      await Promise.all(this.conns.map((nc) => nc.close().catch(() => {})));
    }
  }
}
