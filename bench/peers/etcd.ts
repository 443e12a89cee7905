/**
 * etcd as a peer: Debian's etcd-server (3.4) started here, one member or three on loopback, and a driver
 * over the npm etcd3 client (gRPC).
 *
 * Recipes:
 *   distinct  acquire = Txn(If CreateRevision(key) == 0, Then Put(key, lease)); release = Delete(key).
 *   shared    clientv3/concurrency's Mutex: each client puts `<key>/<lease id hex>` with its lease in a
 *             Txn that also reads the prefix's oldest key; when that is not its own, it waits for the key
 *             just before its own (by create revision) to be deleted, by a watch from the revision it
 *             read, and looks again. Release deletes its own key. A queue: each release wakes only the next.
 *   txn       a batch of keys in one Txn: If CreateRevision(k) == 0 for each, Then Put(k, lease) for each;
 *             release deletes them all in one Txn.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { noop } from 'cockatiel';
import { Etcd3, type Lease } from 'etcd3';
import { freePort } from '../../cluster/dev/nats-launcher.ts';
import { within, type BatchLocks, type LockDriver, type LockOutcome } from './driver.ts';
import { debianBinary, startChild, type Child } from './tools.ts';

/** How long members may take to answer /health; a three-member cluster must also elect a leader. */
const readyTimeoutMs = 30_000;
/** A call with no answer for this long fails instead of hanging the bench. */
const requestTimeoutMs = 10_000;
/** Leases outlive any row; the client keeps them alive, and revoking one at the end removes its keys. */
const leaseTtlS = 30;
/** etcd's default --max-txn-ops is 128 per branch; batches stay at Roster's 64 so both carry the same. */
const batchMax = 64;
/** A port chosen free may be taken before etcd binds it: start again with fresh ports. */
const startAttemptsMax = 3;

export interface EtcdCluster {
  clientUrls: string[];
  /** The members' process ids. */
  pids: number[];
  dataDir: string;
  /** What exited early, with its output's tail, or undefined. */
  failure(): string | undefined;
  stop(): Promise<void>;
}

/** Go's name for this architecture: etcd 3.4 refuses to start on any but amd64 and ppc64le without it. */
function goArch(): string {
  const names: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };
  return names[process.arch] ?? process.arch;
}

export async function startEtcd(members: 1 | 3, dataParent: string): Promise<EtcdCluster> {
  const binary = debianBinary('etcd', 'etcd-server');
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binary, members, dataParent);
    } catch (err) {
      if (!(err instanceof Error && /address already in use/.test(err.message)) || attempt >= startAttemptsMax) throw err;
    }
  }
}

async function startOnce(binary: string, members: number, dataParent: string): Promise<EtcdCluster> {
  const dataDir = mkdtempSync(join(dataParent, 'etcd-bench-'));
  const names = Array.from({ length: members }, (_, k) => `m${k + 1}`);
  const ports: { client: number; peer: number }[] = [];
  for (let k = 0; k < members; k++) ports.push({ client: await freePort(), peer: await freePort() });
  const clientUrls = ports.map((p) => `http://127.0.0.1:${p.client}`);
  const peerUrls = ports.map((p) => `http://127.0.0.1:${p.peer}`);
  const initialCluster = names.map((n, k) => `${n}=${peerUrls[k]}`).join(',');
  // One token for all members: members started with different tokens form different clusters.
  const token = `bench-${process.pid}-${Date.now()}`;
  const arch = goArch();
  const env = { ...process.env, ...(arch === 'amd64' || arch === 'ppc64le' ? {} : { ETCD_UNSUPPORTED_ARCH: arch }) };
  const children: Child[] = names.map((name, k) => startChild(binary, [
    '--name', name, '--data-dir', join(dataDir, name),
    '--listen-client-urls', clientUrls[k]!, '--advertise-client-urls', clientUrls[k]!,
    '--listen-peer-urls', peerUrls[k]!, '--initial-advertise-peer-urls', peerUrls[k]!,
    '--initial-cluster', initialCluster, '--initial-cluster-state', 'new', '--initial-cluster-token', token,
    '--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn',
  ], { env }));
  const failure = () => {
    const k = children.findIndex((c) => c.exited() !== undefined);
    return k < 0 ? undefined : `etcd ${names[k]} stopped (${children[k]!.exited()}):\n${children[k]!.output().slice(-3000)}`;
  };
  const cluster: EtcdCluster = {
    clientUrls, dataDir, failure, pids: children.map((c) => c.proc.pid).filter((p): p is number => p !== undefined),
    stop: async () => {
      await Promise.all(children.map((c) => c.stop()));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(clientUrls.map((u) => waitHealthy(u, failure)));
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** /health answers {"health":"true"} once the member serves requests (a cluster: once it has a leader). */
async function waitHealthy(url: string, failure: () => string | undefined): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    const failed = failure();
    if (failed !== undefined) throw new Error(failed);
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      if (res.ok && ((await res.json()) as { health?: string }).health === 'true') return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`etcd at ${url} not healthy after ${readyTimeoutMs} ms`);
}

// ---------------------------------------------------------------- driver

/** The first key after every key that starts with `prefix` (etcd's range end for a prefix). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) { end[i]! += 1; return end.subarray(0, i + 1); }
  }
  return Buffer.from([0]);
}

interface ClientLease { lease: Lease; id: string; hex: string }

const holderValue = Buffer.from('bench-holder');

export class EtcdDriver implements LockDriver {
  private readonly etcds: Etcd3[];
  private leases: ClientLease[] = [];
  /** The key each client holds: its own key (distinct) or its queue key under the shared prefix. */
  private held: (Buffer | undefined)[] = [];

  /**
   * Batches in one Txn each: acquire is `If CreateRevision(k) == 0` for every key, `Then Put(k, lease)`
   * for every key; release deletes every key in one Txn.
   */
  readonly batch: BatchLocks = {
    max: batchMax,
    acquireAll: async (client, keys) => {
      const ks = keys.map((k) => Buffer.from(k));
      const lease = this.leases[client]!.id;
      const r = await this.etcd(client).kv.txn({
        compare: ks.map((key) => ({ key, target: 'Create', result: 'Equal', create_revision: 0 }) as const),
        success: ks.map((key) => ({ request_put: { key, value: holderValue, lease } })),
      });
      return r.succeeded;
    },
    releaseAll: async (client, keys) => {
      const r = await this.etcd(client).kv.txn({ success: keys.map((k) => ({ request_delete_range: { key: Buffer.from(k) } })) });
      const deleted = r.responses.reduce((n, x) => n + Number(x.response_delete_range?.deleted ?? 0), 0);
      if (deleted !== keys.length) throw new Error(`release of ${keys.length} keys in one Txn: deleted ${deleted}`);
    },
  };

  /** One client connection (one HTTP/2 channel) per member; client c uses member c mod n. */
  constructor(readonly name: string, clientUrls: string[]) {
    this.etcds = clientUrls.map((u) => new Etcd3({
      hosts: u,
      // No retries and no circuit breaker: a failed call must count as an error, not be hidden by a retry.
      faultHandling: { global: noop, host: () => noop },
      // Unary calls get a deadline; the watch and lease keep-alive streams must not.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
    }));
  }

  private etcd(client: number): Etcd3 {
    return this.etcds[client % this.etcds.length]!;
  }

  async setup(keys: readonly string[]): Promise<void> {
    for (let c = 0; c < keys.length; c++) {
      const lease = this.etcd(c).lease(leaseTtlS);
      // A lost keep-alive surfaces as failed releases; listening keeps the emitter from throwing.
      lease.on('lost', () => {});
      const id = await within('etcd lease grant', requestTimeoutMs, lease.grant());
      this.leases.push({ lease, id, hex: BigInt(id).toString(16) });
    }
    this.held = keys.map(() => undefined);
  }

  async tryAcquire(client: number, key: string): Promise<boolean> {
    const k = Buffer.from(key);
    const r = await this.etcd(client).kv.txn({
      compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: k, value: holderValue, lease: this.leases[client]!.id } }],
    });
    if (r.succeeded) this.held[client] = k;
    return r.succeeded;
  }

  async lock(client: number, key: string, until: number, contended: () => void): Promise<LockOutcome> {
    const etcd = this.etcd(client);
    const prefix = Buffer.from(`${key}/`);
    const end = prefixEnd(prefix);
    const mine = Buffer.from(`${key}/${this.leases[client]!.hex}`);
    const oldest = { key: prefix, range_end: end, sort_target: 'Create', sort_order: 'Ascend', limit: 1 } as const;
    let wonTryAt = performance.now();
    const r = await etcd.kv.txn({
      compare: [{ key: mine, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: mine, value: holderValue, lease: this.leases[client]!.id } }, { request_range: oldest }],
      failure: [{ request_range: { key: mine } }, { request_range: oldest }],
    });
    this.held[client] = mine;
    const myRevision = r.succeeded ? Number(r.header.revision) : Number(r.responses[0]!.response_range.kvs[0]?.create_revision);
    const owner = r.responses[1]!.response_range.kvs[0];
    if (owner === undefined || Number(owner.create_revision) === myRevision) return { held: true, wonTryAt };
    // Queued behind others: wait for each key created before ours to go, newest first, as the Go Mutex does.
    contended();
    for (;;) {
      if (performance.now() >= until) return { held: false, wonTryAt };
      wonTryAt = performance.now();
      const before = await etcd.kv.range({
        key: prefix, range_end: end, sort_target: 'Create', sort_order: 'Descend', limit: 1, max_create_revision: myRevision - 1,
      });
      const predecessor = before.kvs[0];
      if (predecessor === undefined) return { held: true, wonTryAt };
      if (!(await this.deleted(etcd, predecessor.key, Number(before.header.revision) + 1, until))) {
        return { held: false, wonTryAt };
      }
    }
  }

  /** Watches `key` from `fromRevision` until it is deleted (true) or `until` passes (false). */
  private async deleted(etcd: Etcd3, key: Buffer, fromRevision: number, until: number): Promise<boolean> {
    const watcher = await within('etcd watch create', requestTimeoutMs,
      etcd.watch().key(key).startRevision(String(fromRevision)).only('delete').create());
    try {
      return await new Promise<boolean>((res, rej) => {
        const timer = setTimeout(() => res(false), Math.max(0, until - performance.now()));
        watcher.once('delete', () => { clearTimeout(timer); res(true); });
        watcher.once('error', (err) => { clearTimeout(timer); rej(err); });
      });
    } finally {
      await watcher.cancel().catch(() => {});
    }
  }

  async release(client: number, key: string): Promise<void> {
    const k = this.held[client];
    if (k === undefined) throw new Error(`release of ${key}: this client holds nothing`);
    this.held[client] = undefined;
    const r = await this.etcd(client).kv.deleteRange({ key: k });
    if (r.deleted !== '1') throw new Error(`release of ${k.toString()}: deleted ${r.deleted} keys, not 1`);
  }

  /** Revoking a lease deletes every key attached to it: what a client still held or queued goes with it. */
  async teardown(): Promise<void> {
    const leases = this.leases;
    this.leases = [];
    this.held = [];
    const results = await Promise.allSettled(leases.map((l) => within('etcd lease revoke', requestTimeoutMs, l.lease.revoke())));
    const failed = results.filter((r) => r.status === 'rejected');
    if (failed.length > 0) throw new Error(`${failed.length} etcd lease revokes failed, first: ${String((failed[0] as PromiseRejectedResult).reason)}`);
  }

  async close(): Promise<void> {
    for (const e of this.etcds) e.close();
  }
}
