/**
 * Session endpoints (registry.md "Sessions", consul-compat.md §1.1): create, destroy, renew, info,
 * node, list. Input is validated here into a SessionCreate command with its id chosen before the log;
 * state-dependent rules (node and bound checks exist, none critical) are decided by apply.
 */
import { randomUUID } from 'node:crypto';
import type { Behavior, SessionCreate } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import { canonicalCheckId, gossipCheckId, lockDelayMsDefault, lockDelayMsMax, sessionTtlMsMax } from '../../domain/limits.ts';
import type { Session } from '../../domain/types.ts';
import type { RegistryState, Result } from '../../state/index.ts';
import { goInvalidDuration, nsInRange, readGoDuration, type GoDuration } from '../../util/duration.ts';
import type { ApiContext } from '../api.ts';
import { field, FieldErrors, jsonObject } from '../body.ts';
import { awaitQuery, checkDatacenter, parseQueryOptions, queryOptionParameters } from '../query.ts';
import { json, type Reply } from '../reply.ts';
import type { Request } from '../request.ts';
import type { Route } from '../router.ts';
import { maySeeSession, requireSessionNode, requireSessionUse } from '../session-access.ts';
import type { Dialect } from '../render.ts';

/**
 * A session in Consul's field order. The seed dialect adds `Owner` (the identity that created it) when
 * there is one; the consul dialect never does, so its answers stay Consul's bytes.
 */
export function renderSession(s: Session, dialect: Dialect): Record<string, unknown> {
  return {
    ID: s.id, Name: s.name, Node: s.node, LockDelay: s.lockDelayNs, Behavior: s.behavior, TTL: s.ttl,
    NodeChecks: s.nodeChecks, ServiceChecks: s.serviceChecks,
    ...(s.checks !== undefined ? { Checks: s.checks } : {}),
    ...(s.owner !== undefined && dialect === 'seed' ? { Owner: s.owner } : {}),
    CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex,
  };
}

const nsPerMs = 1e6;

// ---------------------------------------------------------------- create

function parseLockDelay(value: unknown, errors: FieldErrors, dialect: ApiContext['dialect']): number {
  const read: GoDuration = typeof value === 'string' ? readGoDuration(value)
    : typeof value === 'number' && nsInRange(value) ? { ns: Math.trunc(value) }
    : { problem: 'format', goError: goInvalidDuration(String(value)) };
  if ('problem' in read) {
    errors.broke('LockDelay', 'lockDelayInvalid', { goError: read.goError });
    return 0;
  }
  let ns = read.ns;
  // Consul reads values below 1µs as seconds ("20" means 20s), a compatibility rule kept in both dialects.
  if (Math.abs(ns) < 1000) ns *= 1e9;
  if (dialect === 'seed' && (ns < 0 || ns > lockDelayMsMax * nsPerMs)) {
    errors.add('LockDelay', 'Range', 'must be between 0s and 60s');
  }
  return ns;
}

function parseTtl(value: unknown, errors: FieldErrors, ttlMsMin: number): { ttl: string; ttlMs: number } {
  if (value === undefined || value === null || value === '') return { ttl: '', ttlMs: 0 };
  if (typeof value !== 'string') {
    errors.broke('TTL', 'sessionTtlNotString');
    return { ttl: '', ttlMs: 0 };
  }
  const read = readGoDuration(value);
  if ('problem' in read) {
    errors.broke('TTL', 'sessionTtlInvalid', { tooLong: read.problem === 'range', ttlMsMin, value, goError: read.goError });
    return { ttl: '', ttlMs: 0 };
  }
  const ns = read.ns;
  // A zero duration ("0", "0s", "0ms", ...) is no TTL, and its text is kept as given, as Consul keeps it.
  if (ns === 0) return { ttl: value, ttlMs: 0 };
  const ms = ns / nsPerMs;
  if (ms < ttlMsMin || ms > sessionTtlMsMax) {
    errors.broke('TTL', 'sessionTtlOutOfRange', { ttlMsMin, ns, minText: goDurationText(ttlMsMin) });
  }
  return { ttl: value, ttlMs: ms };
}

function goDurationText(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return `${m}m${s - m * 60}s`;
}

function parseBehavior(value: unknown, errors: FieldErrors): Behavior {
  if (value === undefined || value === null || value === '') return 'release';
  if (value === 'release' || value === 'delete') return value;
  errors.broke('Behavior', 'sessionBehaviorInvalid', { value });
  return 'release';
}

function parseStringList(name: string, value: unknown, errors: FieldErrors): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((x) => typeof x !== 'string')) {
    errors.broke(name, 'sessionStringsInvalid', { name });
    return undefined;
  }
  return (value as string[]).map(canonicalCheckId);
}

function parseServiceChecks(value: unknown, errors: FieldErrors): { ID: string; Namespace: string }[] | null {
  if (value === undefined || value === null) return null;
  const ok = Array.isArray(value) && value.every((x) => x !== null && typeof x === 'object' && typeof field(x as Record<string, unknown>, 'ID').value === 'string');
  if (!ok) {
    errors.broke('ServiceChecks', 'sessionServiceChecksInvalid');
    return null;
  }
  return (value as Record<string, unknown>[]).map((x) => {
    const ns = field(x, 'Namespace').value;
    return { ID: canonicalCheckId(field(x, 'ID').value as string), Namespace: typeof ns === 'string' ? ns : '' };
  });
}

/**
 * The check-binding rules of consul-compat.md §1.1: nothing said about checks binds the gossip check;
 * anything said is taken as given, with the legacy `Checks` list folded as Consul 1.7+ does.
 */
function bindChecks(body: Record<string, unknown> | undefined, errors: FieldErrors): Pick<SessionCreate, 'nodeChecks' | 'serviceChecks' | 'checks'> {
  const nodeChecks = field(body, 'NodeChecks');
  const serviceChecks = field(body, 'ServiceChecks');
  const legacy = field(body, 'Checks');
  const parsedNode = parseStringList('NodeChecks', nodeChecks.value, errors);
  const parsedService = parseServiceChecks(serviceChecks.value, errors);
  const parsedLegacy = parseStringList('Checks', legacy.value, errors);
  if (!nodeChecks.present && !legacy.present) {
    return { nodeChecks: [gossipCheckId], serviceChecks: parsedService };
  }
  if (nodeChecks.present) {
    return { nodeChecks: parsedNode ?? [], serviceChecks: parsedService, ...(parsedLegacy?.length ? { checks: parsedLegacy } : {}) };
  }
  const list = parsedLegacy ?? [];
  const onlyGossip = list.length === 1 && list[0] === gossipCheckId;
  return {
    nodeChecks: list.includes(gossipCheckId) ? [gossipCheckId] : [],
    serviceChecks: parsedService,
    ...(list.length > 0 && !onlyGossip ? { checks: list } : {}),
  };
}

function stringField(body: Record<string, unknown> | undefined, name: string, errors: FieldErrors): string | undefined {
  const { value } = field(body, name);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    errors.broke(name, 'sessionFieldNotString', { name, got: typeof value });
    return undefined;
  }
  return value;
}

export function parseSessionCreate(body: Record<string, unknown> | undefined, api: ApiContext): SessionCreate {
  const errors = new FieldErrors();
  const name = stringField(body, 'Name', errors) ?? '';
  const node = stringField(body, 'Node', errors) || api.nodeName;
  const lockDelay = field(body, 'LockDelay');
  const lockDelayNs = lockDelay.present && lockDelay.value !== null
    ? parseLockDelay(lockDelay.value, errors, api.dialect)
    : lockDelayMsDefault * nsPerMs;
  const behavior = parseBehavior(field(body, 'Behavior').value, errors);
  const { ttl, ttlMs } = parseTtl(field(body, 'TTL').value, errors, api.sessionTtlMsMin);
  const checks = bindChecks(body, errors);
  errors.throwIfAny();
  return { t: 'session.create', id: randomUUID(), node, name, lockDelayNs, behavior, ttl, ttlMs, ...checks };
}

function createFailure(r: Extract<Result, { ok: false }>): RegistryError {
  switch (r.reason) {
    case 'unknown-node':
      return new RegistryError('sessionNodeUnknown', { node: r.detail });
    case 'unknown-check':
      return new RegistryError('sessionCheckUnknown', { check: r.detail });
    case 'check-critical':
      return new RegistryError('sessionCheckCritical', { check: r.detail });
    default:
      return new RegistryError('sessionCreateFailed', { reason: r.reason });
  }
}

async function create(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const cmd = parseSessionCreate(jsonObject(req, 'structs.Session'), api);
  requireSessionNode(req, cmd.node, 'write');
  if (req.identity !== undefined) cmd.owner = req.identity.subject;
  const result = await api.runtime.propose(cmd);
  if (!result.ok) throw createFailure(result);
  return json({ ID: cmd.id });
}

// ---------------------------------------------------------------- destroy, renew

function sessionId(req: Request): string {
  const id = req.rest;
  if (id === '') throw new RegistryError('sessionIdMissing');
  return id;
}

async function destroy(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const id = sessionId(req);
  // A session the caller may not see is destroyed as an unknown one is: nothing, and true, as in Consul.
  if (await requireSessionUse(req, api, id, 'write')) await api.runtime.propose({ t: 'session.destroy', id });
  return json(true);
}

async function renew(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const id = sessionId(req);
  if (!(await requireSessionUse(req, api, id, 'write'))) throw new RegistryError('sessionNotFound', { id });
  const result = await api.runtime.propose({ t: 'session.renew', id });
  if (!result.ok || result.session === undefined) {
    throw new RegistryError('sessionNotFound', { id });
  }
  return json([renderSession(result.session, api.dialect)]);
}

// ---------------------------------------------------------------- reads (blocking)

function sessionRead(select: (req: Request, api: ApiContext) => Session[], needsParam?: 'sessionMissing' | 'nodeMissing') {
  return async (req: Request, api: ApiContext): Promise<Reply> => {
    const q = parseQueryOptions(req, api);
    if (needsParam !== undefined && req.rest === '') {
      throw new RegistryError(needsParam);
    }
    const state = () => api.runtime.state;
    await awaitQuery(req, api, q, { kind: 'sessions' }, () => state().sessionsIndex);
    // Only sessions on nodes the caller may read (all of them without authentication).
    const shown = select(req, api).filter((s) => maySeeSession(req, s));
    return { t: 'json', value: shown.map((s) => renderSession(s, api.dialect)), index: { index: state().sessionsIndex }, bytesHint: renderedBytesAbout(state(), shown.length) };
  };
}

/**
 * About the length of `count` sessions as JSON: the state keeps its sessions' JSON size (the quota's), so a
 * list is hinted at their average size each, without a pass over the list here.
 */
function renderedBytesAbout(state: RegistryState, count: number): number {
  return state.sessions.size === 0 ? 2 : 2 + Math.ceil((state.sessions.bytes / state.sessions.size) * count);
}

const info = sessionRead((req, api) => {
  const s = api.runtime.state.sessions.get(req.rest);
  return s === undefined ? [] : [s];
}, 'sessionMissing');
const byNode = sessionRead((req, api) => api.runtime.state.sessionsOfNode(req.rest), 'nodeMissing');
const list = sessionRead((_req, api) => api.runtime.state.sessionList());

export const sessionRoutes: Route<ApiContext>[] = [
  { path: '/v1/session/create', prefix: false, methods: { PUT: create }, query: ['dc'] },
  { path: '/v1/session/destroy/', prefix: true, methods: { PUT: destroy }, query: ['dc'] },
  { path: '/v1/session/renew/', prefix: true, methods: { PUT: renew }, query: ['dc'] },
  { path: '/v1/session/info/', prefix: true, methods: { GET: info }, query: queryOptionParameters },
  { path: '/v1/session/node/', prefix: true, methods: { GET: byNode }, query: queryOptionParameters },
  { path: '/v1/session/list', prefix: false, methods: { GET: list }, query: queryOptionParameters },
];
