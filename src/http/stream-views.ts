/**
 * The topics of the WebSocket stream (watch.md §4.3). Each topic is a view over state whose items have
 * exactly the shape of the matching HTTP query, keyed as the protocol says (`node/checkID`,
 * `node/serviceID`, the KV key, the session id, the service name). A view reads its snapshot through a
 * cursor, a page at a time from the state as it is when the page is read (a large KV prefix is never
 * rendered whole), and, for a recorded change, names the items the change may have touched with a way to
 * read each one's current JSON (undefined: not in the view any more).
 */
import type { Change } from '../runtime/index.ts';
import { servingOf } from '../runtime/index.ts';
import type { RegistryState } from '../state/index.ts';
import type { KvEntry, ServiceInstance } from '../domain/index.ts';
import type { ApiContext } from './api.ts';
import { renderEntry } from './routes/kv.ts';
import { checksOfInstances, healthEntry, renderCheck, type InstanceChecks } from './routes/catalog-render.ts';
import { renderSession } from './routes/session.ts';

export const topics = ['service_health', 'service_checks', 'node_checks', 'checks_in_state', 'serving_status', 'kv_prefix', 'sessions'] as const;
export type Topic = (typeof topics)[number];

export interface Candidate {
  key: string;
  value(): string | undefined;
}

export interface SnapshotPage {
  /** [key, JSON text] in the HTTP query's order. */
  items: [string, string][];
  /** Characters of the items' keys and JSON. */
  chars: number;
  /** True when the cursor has nothing after these items. */
  done: boolean;
}

/** Reads a view's items in order, each page from the state as it is when it is read. */
export interface SnapshotCursor {
  /** The next items, about `charsMax` of them (at least one item when any is left). */
  next(charsMax: number): SnapshotPage;
}

/**
 * How a view tells a real change from a candidate that changed nothing a subscriber can see:
 * `fingerprints` keeps a fingerprint of each item's JSON (small items: checks, health entries, sessions);
 * `locked` (KV keys a session holds) asks the set of held keys that every such view shares (every
 * candidate still held is a real change, one released is a delete only when it was held); `none`: every
 * candidate is a real change.
 */
export type Tracking = 'fingerprints' | 'locked' | 'none';

export interface TopicView {
  /** A cursor over every item, from the first. */
  cursor(): SnapshotCursor;
  /** Items a change may have touched (a superset is fine when `tracking` drops unchanged items). */
  candidates(change: Change): Candidate[];
  tracking: Tracking;
  /**
   * Every candidate names an item of the subscription's own subject (a key under its prefix, a check of
   * its node), so even the delete of one never in the view tells the subscriber nothing it may not read.
   * False when candidates reach beyond it (the instances and checks of other services on a node): a resume
   * that cannot tell which of them the client held then sends a reset rather than their deletes.
   */
  candidatesReadable: boolean;
}

export interface ViewFilter {
  /** service_health: only entries whose checks all pass (the HTTP `?passing`). */
  passingOnly?: boolean;
  /** kv_prefix: only entries a session holds (the locks); a released key leaves the view as a delete. */
  lockedOnly?: boolean;
}

/** Every topic and the filters it takes (a subscribe naming another is refused: it would change nothing). */
export const topicFilters: ReadonlyMap<string, readonly (keyof ViewFilter)[]> = new Map<string, (keyof ViewFilter)[]>([
  ['service_health', ['passingOnly']], ['service_checks', []], ['node_checks', []], ['checks_in_state', []],
  ['serving_status', []], ['kv_prefix', ['lockedOnly']], ['sessions', []],
]);

const checkStates = new Set(['any', 'passing', 'warning', 'critical']);

/** Builds the view of a topic and key, or names what is wrong with them. */
export function makeView(topic: string, key: string, filter: ViewFilter, api: ApiContext): TopicView | { error: 'unknown_topic' | 'bad_key' } {
  const st = () => api.runtime.state;
  switch (topic) {
    case 'service_health': return serviceHealth(st, key, filter.passingOnly === true, api.datacenter);
    case 'service_checks': return key === '' ? { error: 'bad_key' } : serviceChecks(st, key);
    case 'node_checks': return key === '' ? { error: 'bad_key' } : nodeChecks(st, key);
    case 'checks_in_state': return checkStates.has(key) ? checksInState(st, key) : { error: 'bad_key' };
    case 'serving_status': return servingStatus(st, key, api);
    case 'kv_prefix': return kvPrefix(st, key, filter.lockedOnly === true);
    case 'sessions': return sessions(st, key, api.dialect);
    default: return { error: 'unknown_topic' };
  }
}

type StateOf = () => RegistryState;
const checkKey = (node: string, checkId: string) => `${node}/${checkId}`;
const json = (v: unknown) => JSON.stringify(v);

/** Items of a page whose state a candidate may read at once (a snapshot page holds about this many health entries). */
const readAheadItems = 64;

/**
 * A cursor over a list of state objects in the HTTP query's order, taken when the first page is read
 * (so a connection holds one such list at a time: its snapshots are written one after another) and kept
 * as references only; each item is rendered from the current state when its page is read (an item gone
 * by then is skipped: its delete follows as an event).
 */
function listCursor<T>(list: () => T[], candidate: (item: T, ahead: T[]) => Candidate): SnapshotCursor {
  let items: T[] | undefined;
  let at = 0;
  return {
    next(charsMax) {
      items ??= list();
      const page: [string, string][] = [];
      let chars = 0;
      // The items about to be read in this page, for a candidate that reads state for several at once.
      let ahead: T[] = [];
      let aheadEnd = at;
      while (at < items.length && chars < charsMax) {
        if (at >= aheadEnd) {
          aheadEnd = Math.min(items.length, at + readAheadItems);
          ahead = items.slice(at, aheadEnd);
        }
        const c = candidate(items[at++]!, ahead);
        const value = c.value();
        if (value === undefined) continue;
        page.push([c.key, value]);
        chars += c.key.length + value.length;
      }
      const done = at >= items.length;
      // A finished cursor lets go of its list.
      if (done) items = [];
      return { items: page, chars, done };
    },
  };
}

function checkCandidate(st: StateOf, node: string, checkId: string, keep: (c: NonNullable<ReturnType<RegistryState['checkOf']>>) => boolean): Candidate {
  return {
    key: checkKey(node, checkId),
    value: () => {
      const c = st().checkOf(node, checkId);
      return c !== undefined && keep(c) ? json(renderCheck(c)) : undefined;
    },
  };
}

/**
 * Health entries of one service name, or of every service when the name is `""` (a wildcard subject, as
 * Consul's streaming has for some topics; the dashboard lists services with it, ordered by name, then
 * node, then service id).
 */
function serviceHealth(st: StateOf, name: string, passingOnly: boolean, dc: string): TopicView {
  const every = name === '';
  const instances = () => (every ? allInstances(st()) : st().instancesOf(name));
  // Each entry's checks are read with those of the other entries read with it, in one pass over the checks.
  const entryOf = (node: string, serviceId: string, checks: () => InstanceChecks): Candidate => ({
    key: `${node}/${serviceId}`,
    value: () => {
      const s = st().services.get(st().serviceKey(node, serviceId));
      if (s === undefined || (!every && s.service !== name)) return undefined;
      const entry = healthEntry(st(), s, dc, passingOnly, checks());
      return entry === undefined ? undefined : json(entry);
    },
  });
  return {
    tracking: 'fingerprints',
    candidatesReadable: every,
    cursor: () => {
      let read: { of: ServiceInstance[]; checks: InstanceChecks } | undefined;
      const checksOf = (ahead: ServiceInstance[]) => () => (read?.of === ahead ? read : (read = { of: ahead, checks: checksOfInstances(st(), ahead) })).checks;
      return listCursor(instances, (s, ahead) => entryOf(s.node, s.id, checksOf(ahead)));
    },
    // The candidates' values are read together, right after this, from the same state.
    candidates: (change) => {
      const out = new Map<string, Candidate>();
      const touched: { node: string; id: string }[] = [];
      let read: InstanceChecks | undefined;
      const checks = () => (read ??= checksOfInstances(st(), touched));
      const add = (node: string, serviceId: string) => {
        if (out.has(`${node}/${serviceId}`)) return;
        touched.push({ node, id: serviceId });
        out.set(`${node}/${serviceId}`, entryOf(node, serviceId, checks));
      };
      const onNode = (node: string) => { for (const s of every ? st().servicesOfNode(node) : st().instancesOf(name)) if (s.node === node) add(node, s.id); };
      for (const s of change.services) add(s.node, s.serviceId);
      for (const c of change.checks) c.serviceId !== '' ? add(c.node, c.serviceId) : onNode(c.node);
      for (const n of change.nodes) onNode(n);
      return [...out.values()];
    },
  };
}

function allInstances(state: RegistryState): ReturnType<RegistryState['instancesOf']> {
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...state.services.values()].sort((a, b) => order(a.service, b.service) || order(a.node, b.node) || order(a.id, b.id));
}

function serviceChecks(st: StateOf, name: string): TopicView {
  const keep = (c: { serviceName: string; serviceId: string }) => c.serviceId !== '' && c.serviceName === name;
  return {
    tracking: 'fingerprints',
    candidatesReadable: false,
    cursor: () => listCursor(() => st().allChecks().filter(keep), (c) => checkCandidate(st, c.node, c.checkId, keep)),
    candidates: (change) => {
      const out = new Map<string, Candidate>();
      for (const c of change.checks) if (c.serviceId !== '') out.set(checkKey(c.node, c.checkId), checkCandidate(st, c.node, c.checkId, keep));
      for (const s of change.services) {
        for (const c of st().checksOfService(s.node, s.serviceId)) out.set(checkKey(c.node, c.checkId), checkCandidate(st, c.node, c.checkId, keep));
      }
      return [...out.values()];
    },
  };
}

function nodeChecks(st: StateOf, node: string): TopicView {
  return {
    tracking: 'fingerprints',
    candidatesReadable: true,
    cursor: () => listCursor(() => st().checksOfNode(node), (c) => checkCandidate(st, c.node, c.checkId, () => true)),
    candidates: (change) => change.checks.filter((c) => c.node === node).map((c) => checkCandidate(st, c.node, c.checkId, () => true)),
  };
}

function checksInState(st: StateOf, state: string): TopicView {
  const keep = (c: { status: string }) => state === 'any' || c.status === state;
  return {
    tracking: 'fingerprints',
    candidatesReadable: true,
    cursor: () => listCursor(() => st().allChecks().filter(keep), (c) => checkCandidate(st, c.node, c.checkId, keep)),
    candidates: (change) => change.checks.map((c) => checkCandidate(st, c.node, c.checkId, keep)),
  };
}

/** The WebSocket twin of gRPC Watch: one item, the name, with the gRPC status names. */
function servingStatus(st: StateOf, name: string, api: ApiContext): TopicView {
  const value = () => json({ status: name === '' ? (api.runtime.isStopping ? 'NOT_SERVING' : 'SERVING') : servingOf(st(), name) ?? 'SERVICE_UNKNOWN' });
  return {
    tracking: 'fingerprints',
    candidatesReadable: true,
    cursor: () => listCursor(() => [name], (key) => ({ key, value })),
    candidates: (change) => (change.checks.length + change.services.length + change.nodes.length > 0 ? [{ key: name, value }] : []),
  };
}

/**
 * A KV prefix. Its snapshot walks the key tree from the last key read, so a page costs the keys it
 * holds, whatever the prefix's size. Every KV change recorded is a write (a new ModifyIndex) or a real
 * delete, so without a filter each candidate is sent; with `lockedOnly` a key that was written while no
 * session held it is not in the view, and its delete is sent only when it was.
 */
function kvPrefix(st: StateOf, prefix: string, lockedOnly: boolean): TopicView {
  const keep = (e: { session?: string }) => !lockedOnly || e.session !== undefined;
  return {
    tracking: lockedOnly ? 'locked' : 'none',
    candidatesReadable: true,
    cursor: () => kvCursor(st, prefix, keep),
    candidates: (change) => change.kv.filter((k) => k.startsWith(prefix)).map((key) => ({
      key,
      value: () => {
        const e = st().kvGet(key);
        return e === undefined || !keep(e) ? undefined : renderEntry(e);
      },
    })),
  };
}

function kvCursor(st: StateOf, prefix: string, keep: (e: KvEntry) => boolean): SnapshotCursor {
  let after: string | undefined;
  let done = false;
  return {
    next(charsMax) {
      const items: [string, string][] = [];
      let chars = 0;
      if (done) return { items, chars, done };
      for (const key of st().kvKeysAfter(prefix, after)) {
        if (chars >= charsMax) return { items, chars, done: false };
        after = key;
        const e = st().kvGet(key)!;
        if (!keep(e)) continue;
        const value = renderEntry(e);
        items.push([key, value]);
        chars += key.length + value.length;
      }
      done = true;
      return { items, chars, done };
    },
  };
}

function sessions(st: StateOf, node: string, dialect: ApiContext['dialect']): TopicView {
  const sessionOf = (id: string): Candidate => ({
    key: id,
    value: () => {
      const s = st().sessions.get(id);
      return s !== undefined && (node === '' || s.node === node) ? json(renderSession(s, dialect)) : undefined;
    },
  });
  return {
    tracking: 'fingerprints',
    candidatesReadable: node === '',
    cursor: () => listCursor(() => (node === '' ? st().sessionList() : st().sessionsOfNode(node)), (s) => sessionOf(s.id)),
    candidates: (change) => change.sessions.map(sessionOf),
  };
}
