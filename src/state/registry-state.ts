/**
 * The registry's in-memory state: what every node holds after applying the log up to `index`, and
 * the read queries the front ends answer from. Mutation happens only in apply.ts.
 */
import type { CatalogNode, HealthCheck, KvEntry, ServiceInstance, Session } from '../domain/index.ts';

export class RegistryState {
  /** Index of the last applied entry. */
  index = 0;
  /** atMs of the last applied entry: the log's notion of "now" as far as state is concerned. */
  atMs = 0;
  /** Table indexes: the index of the last entry that changed each table (blocking queries, headers). */
  kvIndex = 0;
  sessionsIndex = 0;
  catalogIndex = 0;

  readonly kv = new Map<string, KvEntry>();
  readonly sessions = new Map<string, Session>();
  /** Derived: the keys each session holds. Rebuilt from `kv` on restore. */
  readonly locksBySession = new Map<string, Set<string>>();
  /** Key → entry time before which no acquire succeeds (armed by invalidation). */
  readonly lockDelays = new Map<string, number>();
  /**
   * Size of lockDelays at which apply next drops expired delays. Not state: expired delays are ignored
   * when read and left out of snapshots, so when they are dropped changes nothing a client can see.
   */
  lockDelaysSweepAt = 1024;
  /** Deleted key → index of its deletion, oldest first; older ones are folded into `tombstoneFloor`. */
  readonly tombstones = new Map<string, number>();
  tombstoneFloor = 0;

  readonly nodes = new Map<string, CatalogNode>();
  /** `${node}\0${checkId}` → check. */
  readonly checks = new Map<string, HealthCheck>();
  /** `${node}\0${serviceId}` → service instance. */
  readonly services = new Map<string, ServiceInstance>();

  // ---- KV reads ----

  kvGet(key: string): KvEntry | undefined {
    return this.kv.get(key);
  }

  /** Entries whose key string-starts-with `prefix`, sorted by key bytes. */
  kvList(prefix: string): KvEntry[] {
    const out: KvEntry[] = [];
    for (const e of this.kv.values()) if (e.key.startsWith(prefix)) out.push(e);
    return out.sort((a, b) => compareKeys(a.key, b.key));
  }

  /** Keys under `prefix`; with a separator each is cut just after the first separator past the prefix. */
  kvKeys(prefix: string, separator: string): string[] {
    const keys = new Set<string>();
    for (const k of this.kv.keys()) {
      if (!k.startsWith(prefix)) continue;
      const cut = separator === '' ? -1 : k.indexOf(separator, prefix.length);
      keys.add(cut < 0 ? k : k.slice(0, cut + separator.length));
    }
    return [...keys].sort(compareKeys);
  }

  /** X-Consul-Index of a single-key read: the entry's ModifyIndex, else the KV table index. */
  kvKeyIndex(key: string): number {
    return this.kv.get(key)?.modifyIndex ?? this.kvIndex;
  }

  /** X-Consul-Index of a prefix read: newest change under the prefix (tombstones too), else the table index. */
  kvPrefixIndex(prefix: string): number {
    let max = 0;
    for (const e of this.kv.values()) if (e.key.startsWith(prefix) && e.modifyIndex > max) max = e.modifyIndex;
    for (const [k, idx] of this.tombstones) if (k.startsWith(prefix) && idx > max) max = idx;
    if (max === 0) return this.kvIndex;
    return Math.max(max, this.tombstoneFloor);
  }

  // ---- Session reads ----

  sessionList(): Session[] {
    return [...this.sessions.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  sessionsOfNode(node: string): Session[] {
    return this.sessionList().filter((s) => s.node === node);
  }

  // ---- Catalog reads ----

  checkKey(node: string, checkId: string): string {
    return `${node}\0${checkId}`;
  }

  serviceKey(node: string, serviceId: string): string {
    return `${node}\0${serviceId}`;
  }

  checkOf(node: string, checkId: string): HealthCheck | undefined {
    return this.checks.get(this.checkKey(node, checkId));
  }

  /** Every check in Consul's storage order: by node, then CheckID without regard to case. */
  allChecks(): HealthCheck[] {
    return [...this.checks.values()].sort(compareChecks);
  }

  checksOfService(node: string, serviceId: string): HealthCheck[] {
    return this.checksOfNode(node).filter((c) => c.serviceId === serviceId);
  }

  servicesOfNode(node: string): ServiceInstance[] {
    const out: ServiceInstance[] = [];
    for (const s of this.services.values()) if (s.node === node) out.push(s);
    return out.sort((a, b) => compareText(a.id, b.id));
  }

  /** Instances of a service name, by node then service id. */
  instancesOf(serviceName: string): ServiceInstance[] {
    const out: ServiceInstance[] = [];
    for (const s of this.services.values()) if (s.service === serviceName) out.push(s);
    return out.sort((a, b) => compareText(a.node, b.node) || compareText(a.id, b.id));
  }

  checksOfNode(node: string): HealthCheck[] {
    const out: HealthCheck[] = [];
    for (const c of this.checks.values()) if (c.node === node) out.push(c);
    return out.sort(compareChecks);
  }
}

/** Orders keys by their UTF-8 bytes, as Consul's radix tree does. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareChecks(a: HealthCheck, b: HealthCheck): number {
  return compareText(a.node, b.node) || compareText(a.checkId.toLowerCase(), b.checkId.toLowerCase()) || compareText(a.checkId, b.checkId);
}
