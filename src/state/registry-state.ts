/**
 * The registry's in-memory state: what every node holds after applying the log up to `index`, and
 * the read queries the front ends answer from. Mutation happens only in apply/.
 */
import sortedBtree from 'sorted-btree';
import type { CatalogNode, HealthCheck, KvEntry, ServiceInstance, Session } from '../domain/index.ts';
import { GroupIndex, jsonSize, SizedMap, tombstoneSize } from './sized-map.ts';

// sorted-btree is CommonJS with its class as `exports.default`: Node's ESM loader hands over
// module.exports (the class is its .default), vite's interop (the tests) the class itself.
type BTreeClass = typeof sortedBtree.default;
const BTree: BTreeClass = (sortedBtree as unknown as { default?: BTreeClass }).default ?? (sortedBtree as unknown as BTreeClass);

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
  /** Derived: the KV table's share of the size estimate (size.ts), kept where entries are written and deleted. */
  kvBytes = 0;
  /**
   * Derived: the keys of `kv` in key-byte order, so a prefix read visits only the keys under the
   * prefix (a B+ tree; with a million keys a scan of `kv` took tens of milliseconds per read).
   * Changed only where a key is created or removed (apply/kv.ts writeEntry and deleteKey, restore).
   */
  readonly kvOrder = new BTree<string, undefined>(undefined, compareKeys);
  /** Derived: sessions by node. */
  private readonly sessionsByNode = new GroupIndex<string, Session>((s) => s.node);
  readonly sessions = new SizedMap<string, Session>(jsonSize, [this.sessionsByNode]);
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
  readonly tombstones = new SizedMap<string, number>(tombstoneSize);
  tombstoneFloor = 0;

  /** Changed only through setNode, deleteNode and clearNodes, which keep the two node indexes below in step. */
  readonly nodes = new SizedMap<string, CatalogNode>(jsonSize);
  /** Derived: node names by lower-cased node ID (a state written before IDs were unique may hold one twice). */
  private readonly nodesById = new Map<string, Set<string>>();
  /** Derived: node names by their lower-cased form. */
  private readonly nodesByFoldedName = new Map<string, Set<string>>();
  /** Derived: checks by node, and by `${node}\0${serviceId}` (node checks under `${node}\0`). */
  private readonly checksByNode = new GroupIndex<string, HealthCheck>((c) => c.node);
  private readonly checksByService = new GroupIndex<string, HealthCheck>((c) => `${c.node}\0${c.serviceId}`);
  /** `${node}\0${checkId}` → check. */
  readonly checks = new SizedMap<string, HealthCheck>(jsonSize, [this.checksByNode, this.checksByService]);
  /** Derived: service instances by node, and by service name. */
  private readonly servicesByNode = new GroupIndex<string, ServiceInstance>((s) => s.node);
  private readonly servicesByName = new GroupIndex<string, ServiceInstance>((s) => s.service);
  /** `${node}\0${serviceId}` → service instance. */
  readonly services = new SizedMap<string, ServiceInstance>(jsonSize, [this.servicesByNode, this.servicesByName]);
  /**
   * Consul's per-service index: for each service name that has instances, the index of the last entry that
   * changed one of them, their checks, or the nodes holding them and those nodes' checks (apply/service-index.ts).
   * Reads of one service report and block on it, so a change of another service wakes none of them.
   */
  readonly serviceIndexes = new Map<string, number>();

  // ---- KV reads ----

  kvGet(key: string): KvEntry | undefined {
    return this.kv.get(key);
  }

  /** Entries whose key string-starts-with `prefix`, sorted by key bytes. */
  kvList(prefix: string): KvEntry[] {
    const out: KvEntry[] = [];
    for (const k of this.keysUnder(prefix)) out.push(this.kv.get(k)!);
    return out;
  }

  /** Keys that string-start-with `prefix`, in key-byte order: the tree from `prefix` on, until one does not. */
  private *keysUnder(prefix: string): Generator<string> {
    for (const k of this.kvOrder.keys(prefix)) {
      if (!k.startsWith(prefix)) return;
      yield k;
    }
  }

  /**
   * Keys under `prefix` strictly after `after` (from the first one when undefined), in key-byte order,
   * read lazily: a reader that pages through a large prefix holds one key, not the list. Consume it
   * within one synchronous step (the tree must not change while it is read).
   */
  *kvKeysAfter(prefix: string, after: string | undefined): Generator<string> {
    const from = after !== undefined && compareKeys(after, prefix) > 0 ? after : prefix;
    for (const k of this.kvOrder.keys(from)) {
      if (!k.startsWith(prefix)) return;
      if (k !== after) yield k;
    }
  }

  /**
   * Keys under `prefix`; with a separator each is cut just after the first separator past the prefix.
   * `readable` (a caller's ACL) filters the full keys before the cut, so a cut name is listed only when
   * a key the caller may read lies under it.
   */
  kvKeys(prefix: string, separator: string, readable?: (key: string) => boolean): string[] {
    const keys = new Set<string>();
    for (const k of this.keysUnder(prefix)) {
      if (readable !== undefined && !readable(k)) continue;
      const cut = separator === '' ? -1 : k.indexOf(separator, prefix.length);
      keys.add(cut < 0 ? k : k.slice(0, cut + separator.length));
    }
    return [...keys].sort(compareKeys);
  }

  /**
   * X-Consul-Index of a single-key read: the entry's ModifyIndex, else the KV table index. For a caller
   * who may not read every key (`readable` given), a missing key's index is its deletion's instead (see
   * hiddenIndex), as the table index moves with writes the caller cannot see.
   */
  kvKeyIndex(key: string, readable?: (key: string) => boolean): number {
    const entry = this.kv.get(key);
    if (entry !== undefined) return entry.modifyIndex;
    return readable === undefined ? this.kvIndex : this.kvVisibleIndex(this.tombstones.get(key) ?? 0);
  }

  /**
   * X-Consul-Index of a prefix read: newest change under the prefix (tombstones too), else the table index.
   * With `readable` (a caller's ACL) only changes to keys it accepts count, so the index, and a blocking
   * query waiting on it, never moves with a write the caller cannot see.
   */
  kvPrefixIndex(prefix: string, readable?: (key: string) => boolean): number {
    let max = 0;
    for (const k of this.keysUnder(prefix)) {
      const m = this.kv.get(k)!.modifyIndex;
      if (m > max && (readable === undefined || readable(k))) max = m;
    }
    for (const [k, idx] of this.tombstones) if (idx > max && k.startsWith(prefix) && (readable === undefined || readable(k))) max = idx;
    if (readable !== undefined) return this.kvVisibleIndex(max);
    if (max === 0) return this.kvIndex;
    return Math.max(max, this.tombstoneFloor);
  }

  /** The index of a filtered KV read that may see nothing under its prefix. */
  kvHiddenIndex(): number {
    return this.kvVisibleIndex(0);
  }

  /**
   * The index of a filtered read whose newest visible change is at `max` (0: none). Never below the
   * tombstone floor, so it does not go back when that change's tombstone is compacted away (the floor
   * moves only then); never 0, which would not block (Consul answers 1 in that case).
   */
  kvVisibleIndex(max: number): number {
    return Math.max(max, this.tombstoneFloor, 1);
  }

  // ---- Session reads ----

  sessionList(): Session[] {
    return [...this.sessions.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  sessionsOfNode(node: string): Session[] {
    return this.sessionsByNode.of(node).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
    return this.checksByService.of(`${node}\0${serviceId}`).sort(compareChecks);
  }

  servicesOfNode(node: string): ServiceInstance[] {
    return this.servicesByNode.of(node).sort(compareServiceIds);
  }

  /** Instances of a service name, by node then service id. */
  instancesOf(serviceName: string): ServiceInstance[] {
    return this.instancesUnordered(serviceName).sort(compareInstances);
  }

  /**
   * X-Consul-Index of a service's reads: its own index, or for a name without instances the catalog's, as
   * Consul falls back to its tables' index for a missing service. Never goes back for a reader: a name's
   * index is at most the catalog's, which its last instance's removal sets, and a new instance's is above it.
   */
  serviceIndex(name: string): number {
    return this.serviceIndexes.get(name) ?? this.catalogIndex;
  }

  /** Whether a service name has instances. */
  hasInstances(serviceName: string): boolean {
    return this.servicesByName.has(serviceName);
  }

  /** Instances of a service name in no particular order, for a reader that needs none. */
  instancesUnordered(serviceName: string): ServiceInstance[] {
    return this.servicesByName.of(serviceName);
  }

  /** The node other than `except` whose ID is `id` (UUIDs compare without regard to case), if any. */
  nodeHoldingId(id: string, except: string): CatalogNode | undefined {
    if (id === '') return undefined;
    for (const name of this.nodesById.get(id.toLowerCase()) ?? []) if (name !== except) return this.nodes.get(name);
    return undefined;
  }

  /** The nodes whose names equal `name` without regard to case. */
  nodesNamedLike(name: string): CatalogNode[] {
    return [...this.nodesByFoldedName.get(name.toLowerCase()) ?? []].map((n) => this.nodes.get(n)!);
  }

  /** Adds or replaces a node record. */
  setNode(n: CatalogNode): void {
    this.deleteNode(n.node);
    this.nodes.set(n.node, n);
    addTo(this.nodesByFoldedName, n.node.toLowerCase(), n.node);
    if (n.id !== '') addTo(this.nodesById, n.id.toLowerCase(), n.node);
  }

  deleteNode(name: string): void {
    const old = this.nodes.get(name);
    if (old === undefined) return;
    this.nodes.delete(name);
    removeFrom(this.nodesByFoldedName, name.toLowerCase(), name);
    removeFrom(this.nodesById, old.id.toLowerCase(), name);
  }

  /** Removes every node record. */
  clearNodes(): void {
    this.nodes.clear();
    this.nodesById.clear();
    this.nodesByFoldedName.clear();
  }

  checksOfNode(node: string): HealthCheck[] {
    return this.checksByNode.of(node).sort(compareChecks);
  }
}

function addTo(index: Map<string, Set<string>>, key: string, name: string): void {
  let names = index.get(key);
  if (names === undefined) index.set(key, (names = new Set()));
  names.add(name);
}

function removeFrom(index: Map<string, Set<string>>, key: string, name: string): void {
  const names = index.get(key);
  if (names === undefined) return;
  names.delete(name);
  if (names.size === 0) index.delete(key);
}

/** Orders keys by their UTF-8 bytes, as Consul's radix tree does. */
const surrogate = /[\uD800-\uDFFF]/;

/**
 * Key-byte (UTF-8) order, as Consul sorts keys, without encoding: UTF-8 byte order is code point
 * order, and UTF-16 code units disagree with it only where a surrogate (a code point above U+FFFF)
 * meets a unit at or above U+E000. Keys are well-formed text (they come through decodeURIComponent).
 */
export function compareKeys(a: string, b: string): number {
  // Without surrogates UTF-16 order is byte order: let the engine compare (most keys are ASCII).
  if (!surrogate.test(a) && !surrogate.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    if (xSurrogate !== ySurrogate && (xSurrogate ? y >= 0xe000 : x >= 0xe000)) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The order of a service's instances: by node, then ID. */
export function compareInstances(a: ServiceInstance, b: ServiceInstance): number {
  return compareText(a.node, b.node) || compareText(a.id, b.id);
}

/** The order of a node's services: by ID. */
export function compareServiceIds(a: ServiceInstance, b: ServiceInstance): number {
  return compareText(a.id, b.id);
}

function compareChecks(a: HealthCheck, b: HealthCheck): number {
  return compareText(a.node, b.node) || compareText(a.checkId.toLowerCase(), b.checkId.toLowerCase()) || compareText(a.checkId, b.checkId);
}
