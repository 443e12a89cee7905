/**
 * The topics of the WebSocket stream (watch.md §4.3). Each topic is a view over state whose items have
 * exactly the shape of the matching HTTP query, keyed as the protocol says (`node/checkID`,
 * `node/serviceID`, the KV key, the session id, the service name). A view lists its items for a
 * snapshot and, for a recorded change, names the items the change may have touched with a way to read
 * each one's current JSON (undefined: not in the view any more).
 */
import type { Change } from '../runtime/index.ts';
import { servingOf } from '../runtime/index.ts';
import type { RegistryState } from '../state/index.ts';
import type { ApiContext } from './api.ts';
import { renderEntry } from './routes/kv.ts';
import { healthEntry, renderCheck } from './routes/health.ts';
import { renderSession } from './routes/session.ts';

export const topics = ['service_health', 'service_checks', 'node_checks', 'checks_in_state', 'serving_status', 'kv_prefix', 'sessions'] as const;
export type Topic = (typeof topics)[number];

export interface Candidate {
  key: string;
  value(): string | undefined;
}

export interface TopicView {
  /** Every item now, in the HTTP query's order: [key, JSON text]. */
  snapshot(): [string, string][];
  /** Items a change may have touched (a superset is fine: unchanged items are not sent). */
  candidates(change: Change): Candidate[];
}

export interface ViewFilter {
  /** service_health: only entries whose checks all pass (the HTTP `?passing`). */
  passingOnly?: boolean;
  /** kv_prefix: only entries a session holds (the locks); a released key leaves the view as a delete. */
  lockedOnly?: boolean;
}

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
  const entryOf = (node: string, serviceId: string): Candidate => ({
    key: `${node}/${serviceId}`,
    value: () => {
      const s = st().services.get(st().serviceKey(node, serviceId));
      if (s === undefined || (!every && s.service !== name)) return undefined;
      const entry = healthEntry(st(), s, dc, passingOnly);
      return entry === undefined ? undefined : json(entry);
    },
  });
  return {
    snapshot: () => instances().flatMap((s) => {
      const entry = healthEntry(st(), s, dc, passingOnly);
      return entry === undefined ? [] : [[`${s.node}/${s.id}`, json(entry)] as [string, string]];
    }),
    candidates: (change) => {
      const out = new Map<string, Candidate>();
      const add = (node: string, serviceId: string) => out.set(`${node}/${serviceId}`, entryOf(node, serviceId));
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
    snapshot: () => st().allChecks().filter(keep).map((c) => [checkKey(c.node, c.checkId), json(renderCheck(c))]),
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
    snapshot: () => st().checksOfNode(node).map((c) => [checkKey(c.node, c.checkId), json(renderCheck(c))]),
    candidates: (change) => change.checks.filter((c) => c.node === node).map((c) => checkCandidate(st, c.node, c.checkId, () => true)),
  };
}

function checksInState(st: StateOf, state: string): TopicView {
  const keep = (c: { status: string }) => state === 'any' || c.status === state;
  return {
    snapshot: () => st().allChecks().filter(keep).map((c) => [checkKey(c.node, c.checkId), json(renderCheck(c))]),
    candidates: (change) => change.checks.map((c) => checkCandidate(st, c.node, c.checkId, keep)),
  };
}

/** The WebSocket twin of gRPC Watch: one item, the name, with the gRPC status names. */
function servingStatus(st: StateOf, name: string, api: ApiContext): TopicView {
  const value = () => json({ status: name === '' ? (api.runtime.isStopping ? 'NOT_SERVING' : 'SERVING') : servingOf(st(), name) ?? 'SERVICE_UNKNOWN' });
  return {
    snapshot: () => [[name, value()]],
    candidates: (change) => (change.checks.length + change.services.length + change.nodes.length > 0 ? [{ key: name, value }] : []),
  };
}

function kvPrefix(st: StateOf, prefix: string, lockedOnly: boolean): TopicView {
  const keep = (e: { session?: string }) => !lockedOnly || e.session !== undefined;
  return {
    snapshot: () => st().kvList(prefix).filter(keep).map((e) => [e.key, renderEntry(e)]),
    candidates: (change) => change.kv.filter((k) => k.startsWith(prefix)).map((key) => ({
      key,
      value: () => {
        const e = st().kvGet(key);
        return e === undefined || !keep(e) ? undefined : renderEntry(e);
      },
    })),
  };
}

function sessions(st: StateOf, node: string, dialect: ApiContext['dialect']): TopicView {
  return {
    snapshot: () => (node === '' ? st().sessionList() : st().sessionsOfNode(node)).map((s) => [s.id, json(renderSession(s, dialect))]),
    candidates: (change) => change.sessions.map((id) => ({
      key: id,
      value: () => {
        const s = st().sessions.get(id);
        return s !== undefined && (node === '' || s.node === node) ? json(renderSession(s, dialect)) : undefined;
      },
    })),
  };
}
