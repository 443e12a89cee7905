/**
 * Authorization: which rules a caller holds, whether they permit a request, and which permission each
 * HTTP route needs. Pure functions only: no I/O, no clock, nothing from src/http.
 *
 * Rule resolution (Consul's prefix ACLs): among the caller's rules for the requested resource, the one
 * with the longest prefix of the name decides; a `deny` beats an allow of the same prefix length;
 * `write` implies `read`. With no matching rule the answer is no (default deny).
 */

export type Access = 'read' | 'write';

export const resources = ['key', 'session', 'node', 'service', 'check', 'agent', 'operator'] as const;
export type Resource = (typeof resources)[number];

export interface Rule {
  resource: Resource;
  /** Matches every name that starts with it; "" matches every name. */
  prefix: string;
  access: Access | 'deny';
}

export interface Identity {
  subject: string;
  rules: Rule[];
  /** When the credentials stop being valid (a token's `exp`, skew allowed); absent: per request only. */
  expiresAtMs?: number;
}

export interface AccessRequest {
  resource: Resource;
  name: string;
  access: Access;
  /**
   * The name is known only to the route's handler (a session's node is in state, a new session's in the
   * body): the gate authenticates, the handler checks `resource` and `access` on that name.
   */
  byHandler?: true;
}

/** Rules one identity may carry (they travel inside every token, so they stay few). */
export const rulesPerIdentityMax = 256;
/** Characters in one rule prefix (the longest key Consul accepts is far shorter). */
export const rulePrefixCharsMax = 512;

const ruleAccesses: readonly string[] = ['read', 'write', 'deny'];

/** True when `value` is a well-formed Rule (used on token claims, which arrive as untrusted JSON). */
export function isRule(value: unknown): value is Rule {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.resource === 'string' &&
    (resources as readonly string[]).includes(r.resource) &&
    typeof r.prefix === 'string' &&
    r.prefix.length <= rulePrefixCharsMax &&
    typeof r.access === 'string' &&
    ruleAccesses.includes(r.access)
  );
}

/** The rule list of a token claim, or undefined when it is not a bounded array of well-formed rules. */
export function parseRules(value: unknown): Rule[] | undefined {
  if (!Array.isArray(value) || value.length > rulesPerIdentityMax || !value.every(isRule)) return undefined;
  // Copy only the known fields so extra claim properties never reach the caller.
  return value.map((r: Rule) => ({ resource: r.resource, prefix: r.prefix, access: r.access }));
}

/** Whether `identity` may perform `req`. */
export function allowed(identity: Identity, req: AccessRequest): boolean {
  return decide(identity.rules, req.resource, req.name, req.access);
}

/**
 * Whether `identity` may perform `req` on the name *and on every name below it*: the check for a
 * recursive read (`?recurse`, `?keys`) or a recursive delete of a KV prefix. A longer rule under the
 * prefix that denies or downgrades the access makes the answer no, so a prefix grant cannot be used to
 * read or delete keys that a more specific rule protects.
 */
export function allowedPrefix(identity: Identity, req: AccessRequest): boolean {
  if (!allowed(identity, req)) return false;
  return identity.rules.every(
    (r) =>
      r.resource !== req.resource ||
      r.prefix.length <= req.name.length ||
      !r.prefix.startsWith(req.name) ||
      decide(identity.rules, req.resource, r.prefix, req.access),
  );
}

/**
 * The operator rule: `{resource: "operator", prefix: "", access: "write"}` (Consul's `operator = "write"`).
 * It stands in for the owner of any session, so an operator can renew, destroy or release what another
 * identity's session holds (a stuck lock, a departed service).
 */
const operatorWrite: AccessRequest = { resource: 'operator', name: '', access: 'write' };

/** Whether `identity` holds the operator rule. */
export function isOperator(identity: Identity): boolean {
  return allowed(identity, operatorWrite);
}

/**
 * The subjects of signed requests: `app:<appKey>`. A session records its creator's subject as its owner,
 * so token subjects and app identities must never meet: a token whose subject lies in this namespace is
 * refused (tokens.ts), and an Owner `app:x` always means the signed caller with app key x.
 */
export const appSubjectPrefix = 'app:';

/** The identity of a signed request made with `appKey`. */
export function appSubject(appKey: string): string {
  return `${appSubjectPrefix}${appKey}`;
}

/** Whether `subject` is in the signed callers' namespace (no token may carry it). */
export function isAppSubject(subject: string): boolean {
  return subject.startsWith(appSubjectPrefix);
}

/**
 * Whether `identity` may use a session as its owner does: renew or destroy it, acquire or release locks
 * with it. The identity that created it may, and an operator. A session without an owner (created while
 * authentication was off) is an operator's alone.
 */
export function mayUseSession(identity: Identity, session: { owner?: string }): boolean {
  return (session.owner !== undefined && session.owner === identity.subject) || isOperator(identity);
}

/**
 * Whether some name at or below `prefix` may be granted `access`: some rule granting it has a prefix that
 * lies under `prefix` or that `prefix` lies under. False means every name below is refused (no rule can
 * match one), so a list of them need not be walked to find that nothing in it may be shown.
 */
export function allowedSomewhereUnder(identity: Identity, resource: Resource, prefix: string, access: Access): boolean {
  return identity.rules.some((r) => r.resource === resource && grants(r.access, access) && (r.prefix.startsWith(prefix) || prefix.startsWith(r.prefix)));
}

/**
 * Whether some rule of `identity` grants `access` on some name of `resource` (a cheap first test before
 * work that finds the name; the real check on the name still follows).
 */
export function allowedSomewhere(identity: Identity, resource: Resource, access: Access): boolean {
  return identity.rules.some((r) => r.resource === resource && grants(r.access, access));
}

/** Longest matching prefix decides; at that length a deny beats any allow, else any allow grants. */
function decide(rules: readonly Rule[], resource: Resource, name: string, access: Access): boolean {
  const matching = rules.filter((r) => r.resource === resource && name.startsWith(r.prefix));
  if (matching.length === 0) return false;
  const longest = matching.reduce((max, r) => Math.max(max, r.prefix.length), 0);
  const deciding = matching.filter((r) => r.prefix.length === longest);
  if (deciding.some((r) => r.access === 'deny')) return false;
  return deciding.some((r) => grants(r.access, access));
}

function grants(held: Access | 'deny', wanted: Access): boolean {
  if (held === 'deny') return false;
  return held === 'write' || wanted === 'read';
}

/**
 * What a route needs. `access: 'byMethod'` means GET and HEAD read, any other method writes (so a method
 * the route does not serve still needs write before the router answers 405). `name: 'rest'` takes the
 * route's trailing parameter; `''` is for routes whose subject is in the body or that list everything;
 * `'byHandler'` leaves the check to the handler, which alone knows the name (see AccessRequest.byHandler).
 */
interface RoutePermission {
  path: string;
  prefix: boolean;
  resource: Resource;
  access: Access | 'byMethod';
  name: 'rest' | '' | 'byHandler';
  /** What the trailing parameter names when the rule names nothing (`name: ''`), for mayReadPathName. */
  restNames?: Resource;
}

/** One row per route of src/http/routes, in the same order. */
const routePermissions: readonly RoutePermission[] = [
  // KV: a key or, with ?recurse / ?keys, a prefix (see allowedPrefix).
  { path: '/v1/kv/', prefix: true, resource: 'key', access: 'byMethod', name: 'rest' },
  // Transactions: each operation's key is in the body; the handler checks each one's rule.
  { path: '/v1/txn', prefix: false, resource: 'key', access: 'write', name: 'byHandler' },
  // Sessions: rules name the session's node, never its id (Consul's `session "<node prefix>"`). The node is
  // in the path for /node/<node>; create names it in the body, info/renew/destroy find it in state, and the
  // list holds only sessions on readable nodes, so their handlers check it.
  { path: '/v1/session/create', prefix: false, resource: 'session', access: 'write', name: 'byHandler' },
  { path: '/v1/session/destroy/', prefix: true, resource: 'session', access: 'write', name: 'byHandler' },
  { path: '/v1/session/renew/', prefix: true, resource: 'session', access: 'write', name: 'byHandler' },
  { path: '/v1/session/info/', prefix: true, resource: 'session', access: 'read', name: 'byHandler' },
  { path: '/v1/session/node/', prefix: true, resource: 'session', access: 'read', name: 'rest' },
  { path: '/v1/session/list', prefix: false, resource: 'session', access: 'read', name: 'byHandler' },
  // Catalog writes name the node in the body; the handler checks write on it (and, for a registration
  // that takes a node ID from another node, on that node too).
  { path: '/v1/catalog/register', prefix: false, resource: 'node', access: 'write', name: 'byHandler' },
  { path: '/v1/catalog/deregister', prefix: false, resource: 'node', access: 'write', name: 'byHandler' },
  { path: '/v1/catalog/datacenters', prefix: false, resource: 'node', access: 'read', name: '' },
  { path: '/v1/catalog/services', prefix: false, resource: 'node', access: 'read', name: '' },
  { path: '/v1/catalog/service/', prefix: true, resource: 'service', access: 'read', name: 'rest' },
  { path: '/v1/catalog/nodes', prefix: false, resource: 'node', access: 'read', name: '' },
  { path: '/v1/catalog/node/', prefix: true, resource: 'node', access: 'read', name: 'rest' },
  { path: '/v1/catalog/node-services/', prefix: true, resource: 'node', access: 'read', name: 'rest' },
  // Health reads.
  { path: '/v1/health/node/', prefix: true, resource: 'node', access: 'read', name: 'rest' },
  { path: '/v1/health/checks/', prefix: true, resource: 'service', access: 'read', name: 'rest' },
  { path: '/v1/health/service/', prefix: true, resource: 'service', access: 'read', name: 'rest' },
  { path: '/v1/health/state/', prefix: true, resource: 'node', access: 'read', name: '' },
  // Agent checks and services: register names the check (its id) or the service (its name) in the body,
  // and its handler checks write on that name (a service registered over another of the same id: on both);
  // a service's deregistration names its id, and the handler checks write on the instance's name.
  { path: '/v1/agent/checks', prefix: false, resource: 'check', access: 'read', name: '' },
  { path: '/v1/agent/check/register', prefix: false, resource: 'check', access: 'write', name: 'byHandler' },
  { path: '/v1/agent/check/deregister/', prefix: true, resource: 'check', access: 'write', name: 'rest' },
  { path: '/v1/agent/check/pass/', prefix: true, resource: 'check', access: 'write', name: 'rest' },
  { path: '/v1/agent/check/warn/', prefix: true, resource: 'check', access: 'write', name: 'rest' },
  { path: '/v1/agent/check/fail/', prefix: true, resource: 'check', access: 'write', name: 'rest' },
  { path: '/v1/agent/check/update/', prefix: true, resource: 'check', access: 'write', name: 'rest' },
  { path: '/v1/agent/services', prefix: false, resource: 'service', access: 'read', name: '' },
  { path: '/v1/agent/service/register', prefix: false, resource: 'service', access: 'write', name: 'byHandler' },
  { path: '/v1/agent/service/deregister/', prefix: true, resource: 'service', access: 'write', name: 'byHandler' },
  // One service of the agent by its id (its definition, its health): read on its name, which the handler finds
  // in state (a service the token may not read answers as an unknown id); its health by name: read on the name.
  { path: '/v1/agent/service/', prefix: true, resource: 'service', access: 'read', name: 'byHandler' },
  { path: '/v1/agent/health/service/id/', prefix: true, resource: 'service', access: 'read', name: 'byHandler' },
  { path: '/v1/agent/health/service/name/', prefix: true, resource: 'service', access: 'read', name: 'rest' },
  // Maintenance: write on this agent's node (Consul's node:write), or on the name of the service, which the
  // handler finds in state.
  { path: '/v1/agent/maintenance', prefix: false, resource: 'node', access: 'write', name: 'byHandler' },
  { path: '/v1/agent/service/maintenance/', prefix: true, resource: 'service', access: 'write', name: 'byHandler' },
  // Agent and cluster state. Leader and peers describe the Raft configuration: operator data, as in Consul.
  { path: '/v1/agent/self', prefix: false, resource: 'agent', access: 'read', name: '' },
  { path: '/v1/agent/members', prefix: false, resource: 'agent', access: 'read', name: '' },
  // Reload, leave and force-leave change the agent itself (Consul: agent:write).
  { path: '/v1/agent/reload', prefix: false, resource: 'agent', access: 'write', name: '' },
  { path: '/v1/agent/leave', prefix: false, resource: 'agent', access: 'write', name: '' },
  { path: '/v1/agent/force-leave/', prefix: true, resource: 'agent', access: 'write', name: '', restNames: 'node' },
  // Metrics describe the agent as /v1/agent/self does (Consul: agent read).
  { path: '/v1/agent/metrics', prefix: false, resource: 'agent', access: 'read', name: '' },
  // The agent's log (Consul: agent read).
  { path: '/v1/agent/monitor', prefix: false, resource: 'agent', access: 'read', name: '' },
  // The machine and process the agent runs on, and profiles of it (Consul's /v1/agent/host and
  // /debug/pprof/*: operator read).
  { path: '/v1/agent/host', prefix: false, resource: 'operator', access: 'read', name: '' },
  { path: '/v1/agent/debug/cpu-profile', prefix: false, resource: 'operator', access: 'read', name: '' },
  { path: '/v1/agent/debug/heap-profile', prefix: false, resource: 'operator', access: 'read', name: '' },
  { path: '/v1/status/leader', prefix: false, resource: 'operator', access: 'read', name: '' },
  { path: '/v1/status/peers', prefix: false, resource: 'operator', access: 'read', name: '' },
  // The log's copies, leader and every node's progress: operator data, as Consul's /v1/operator/raft/*.
  { path: '/v1/operator/log', prefix: false, resource: 'operator', access: 'read', name: '' },
  // Backup and restore: the whole state, every table (Consul: operator read to save, write to restore).
  { path: '/v1/snapshot', prefix: false, resource: 'operator', access: 'byMethod', name: '' },
  // A session's timer and queued acquires (read on its node, checked by the handler); a key's queue of
  // acquires (read on the key).
  { path: '/v1/session/timer/', prefix: true, resource: 'session', access: 'read', name: 'byHandler' },
  { path: '/v1/lock/queue/', prefix: true, resource: 'key', access: 'read', name: 'rest' },
  // A plain GET of the stream's path answers what the upgrade would (routes/stream-probe.ts): the
  // handler judges the token as the upgrade does (src/http/stream-upgrade.ts: read on some service, node,
  // session or key prefix); each subscription is then checked against its topic's resource.
  { path: '/v1/stream', prefix: false, resource: 'agent', access: 'read', name: 'byHandler' },
];

const exactRoutes = new Map(routePermissions.filter((r) => !r.prefix).map((r) => [r.path, r]));
const prefixRoutes = routePermissions.filter((r) => r.prefix).sort((a, b) => b.path.length - a.path.length);

/**
 * The permission an HTTP request needs, from its method, its /v1 path and the route's trailing parameter
 * (already URL-decoded). Matches paths as src/http/router.ts does (a trailing slash on an exact route,
 * a prefix route without its final slash). Undefined for a path no route serves, and for OPTIONS,
 * which the router answers with `Allow` alone and which browsers send without credentials.
 */
export function accessFor(method: string, path: string, rest: string): AccessRequest | undefined {
  const verb = method.toUpperCase();
  if (verb === 'OPTIONS') return undefined;
  const route = matchRoute(path);
  if (route === undefined) return undefined;
  const access = route.access === 'byMethod' ? (verb === 'GET' || verb === 'HEAD' ? 'read' : 'write') : route.access;
  if (route.name === 'byHandler') return { resource: route.resource, name: '', access, byHandler: true };
  return { resource: route.resource, name: route.name === 'rest' ? rest : '', access };
}

/**
 * Whether `identity` may read what a request path names, by the route's row: the key, node, service or
 * check of a trailing parameter it reads by name; for a name only a handler can judge (a session's id, a
 * service's id), read on every name of that resource; a trailing parameter the rule does not judge but
 * that names something (`restNames`: force-leave's node), read on it; a path naming nothing, always; a path of no row
 * (unknown to the table, or to the router), operator write, as the gate asks of it. `path` is as the client
 * sent it, its name still percent-encoded; one that does not decode is not readable.
 */
export function mayReadPathName(identity: Identity, path: string): boolean {
  const route = matchRoute(path);
  if (route === undefined) return allowed(identity, { resource: 'operator', name: '', access: 'write' });
  const raw = route.prefix ? path.slice(route.path.length) : '';
  if (raw === '' || (route.name === '' && route.restNames === undefined)) return true;
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    return false;
  }
  if (route.name === '') return allowed(identity, { resource: route.restNames!, name, access: 'read' });
  if (route.name === 'rest') return allowed(identity, { resource: route.resource, name, access: 'read' });
  return allowedPrefix(identity, { resource: route.resource, name: '', access: 'read' });
}

function matchRoute(path: string): RoutePermission | undefined {
  const exact = exactRoutes.get(path) ?? (path.endsWith('/') ? exactRoutes.get(path.slice(0, -1)) : undefined);
  if (exact !== undefined) return exact;
  return prefixRoutes.find((r) => path.startsWith(r.path) || path === r.path.slice(0, -1));
}
