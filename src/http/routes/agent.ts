/**
 * Status, agent and catalog-node endpoints the core needs: who leads (`/v1/status/*`, answered in
 * operator.ts), who this agent is (`/v1/agent/self`), its metrics (`/v1/agent/metrics`, JSON or `?format=prometheus`), and registering/deregistering nodes and their node-level checks through the
 * catalog (`/v1/catalog/register|deregister`), which is how a node's check goes critical or disappears
 * and so invalidates the sessions bound to it. Who may make those writes: catalog-acl.ts.
 */
import type { CatalogCheck, CatalogRegister } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { Member } from '../../ports/membership.ts';
import { canonicalCheckId, gossipCheckId } from '../../domain/limits.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import type { RegistryState } from '../../state/index.ts';
import { field, FieldErrors, jsonObject } from '../body.ts';
import { cachedAnswer, checkDatacenter } from '../query.ts';
import { consulApiVersion, reportedVersion } from '../render.ts';
import { json, type Reply } from '../reply.ts';
import { flag, param, type Request } from '../request.ts';
import { memberSchema } from '../../filter/index.ts';
import { filterOf } from '../filtering.ts';
import { prometheusText } from '../negotiation.ts';
import type { Route } from '../router.ts';
import { requireCatalogCheckRemoval, requireCatalogCheckWrite, requireNodeRemoval } from './catalog-acl.ts';
import { logStats, statusLeader, statusPeers } from './operator.ts';

const memberStatus = { alive: 1, left: 3, failed: 4 } as const;

/** A gossip member with Consul's field names and status numbers (1 alive, 3 left, 4 failed); in the consul dialect its build is the Consul release followed. */
function renderMember(api: ApiContext, m: Member): Record<string, unknown> {
  const self = m.name === api.nodeName;
  const [host = '127.0.0.1', port = '8300'] = (self ? api.serverAddress : m.http).split(/:(?=\d+$)/);
  return {
    Name: m.name, Addr: host, Port: Number(port),
    Tags: {
      role: api.dialect === 'consul' ? 'consul' : 'roster', dc: api.datacenter, id: m.id, port, grpc: m.grpc,
      // Consul's `<version>:<revision>`, which `consul members` shows as the member's build ("< 0.3" without it).
      ...(api.dialect === 'consul' ? { build: `${consulApiVersion}:` } : {}),
      // A member alive to gossip that says its stream has stopped answering it: it owns no timers meanwhile.
      ...(m.logUnreachable === true ? { log: 'unreachable' } : {}),
    },
    Status: memberStatus[m.status], ProtocolMin: 1, ProtocolMax: 5, ProtocolCur: 2, DelegateMin: 2, DelegateMax: 5, DelegateCur: 4,
  };
}

function selfMember(api: ApiContext): Record<string, unknown> {
  const self = api.runtime.membership.members().find((m) => m.name === api.nodeName);
  return renderMember(api, self ?? { name: api.nodeName, id: api.runtime.nodeId, http: api.serverAddress, grpc: '', status: 'alive', lastHeardMs: 0 });
}

async function members(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  if (flag(req, 'segment') && param(req, 'wan') !== undefined && param(req, 'wan') !== 'false') {
    throw new RegistryError('segmentWithWan');
  }
  const filter = filterOf(req, memberSchema);
  const members = api.runtime.membership.members().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return json(await filter.keep(members.map((m) => renderMember(api, m)), (m) => m));
}

/** `?cached` marks the answer as Consul's agent marks it from its cache (query.ts cachedAnswer). */
function datacenters(req: Request, api: ApiContext): Reply {
  return cachedAnswer(json([api.datacenter]), req);
}

function memoryStats(): Record<string, string> {
  const m = process.memoryUsage();
  return { rss_bytes: String(m.rss), heap_used_bytes: String(m.heapUsed), heap_total_bytes: String(m.heapTotal), external_bytes: String(m.external) };
}

function self(_req: Request, api: ApiContext): Reply {
  const node = api.runtime.state.nodes.get(api.nodeName);
  return json({
    Config: {
      Datacenter: api.datacenter, PrimaryDatacenter: api.datacenter, NodeName: api.nodeName, NodeID: api.runtime.nodeId,
      Revision: '', Server: true, Version: reportedVersion(api.dialect, api.version), BuildDate: '', RosterVersion: api.version,
    },
    DebugConfig: { Dialect: api.dialect, SessionTTLMin: `${api.sessionTtlMsMin / 1000}s` },
    Coord: null,
    Member: selfMember(api),
    Stats: {
      ...logStats(api),
      // Strings, as Consul's Stats values are.
      runtime: {
        version: process.version, uptime_ms: String(Date.now() - api.startedAtMs),
        ...memoryStats(),
      },
    },
    Meta: node?.meta ?? {},
  });
}

/**
 * `/v1/agent/metrics`: Consul's JSON shape, or the Prometheus text format with `?format=prometheus`.
 * `?format=json` (or an empty value) names the default; any other format is refused, in both dialects
 * (Consul would answer JSON, which a scraper asking for something else could not read either).
 */
async function metrics(req: Request, api: ApiContext): Promise<Reply> {
  const format = param(req, 'format');
  if (format === 'prometheus') {
    const { contentType, text } = await api.metrics.prometheus();
    return { t: 'text', body: text, contentType };
  }
  if (format === undefined || format === '' || format === 'json') return json(await api.metrics.consul());
  throw new RegistryError('metricsFormatInvalid', { format });
}

// ---------------------------------------------------------------- catalog register/deregister

const checkStatuses = new Set(['passing', 'warning', 'critical']);

function parseCheck(raw: unknown, where: string, errors: FieldErrors): CatalogCheck | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    errors.add(where, 'Type', 'must be an object');
    return undefined;
  }
  const o = raw as Record<string, unknown>;
  const text = (name: string) => {
    const v = field(o, name).value;
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') { errors.add(`${where}.${name}`, 'Type', 'must be a string'); return ''; }
    return v;
  };
  const name = text('Name');
  const checkId = canonicalCheckId(text('CheckID') || name);
  const status = text('Status') || 'critical';
  if (name === '') errors.broke(`${where}.Name`, 'checkNameMissing');
  if (!checkStatuses.has(status)) errors.broke(`${where}.Status`, 'checkStatusBad', { inService: false });
  if (text('ServiceID') !== '') errors.add(`${where}.ServiceID`, 'Unsupported', 'service checks are registered through the agent service endpoints');
  return { checkId, name, status: status as CatalogCheck['status'], notes: text('Notes'), output: text('Output') };
}

function parseRegister(body: Record<string, unknown> | undefined, api: ApiContext): CatalogRegister {
  const errors = new FieldErrors();
  const str = (name: string) => {
    const v = field(body, name).value;
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') { errors.add(name, 'Type', 'must be a string'); return ''; }
    return v;
  };
  const node = str('Node');
  const address = str('Address');
  if (node === '') errors.broke('Node', 'nodeNameMissing');
  if (address === '') errors.broke('Address', 'nodeAddressMissing');
  const meta = stringMap(body, 'NodeMeta', errors) ?? {};
  const taggedAddresses = stringMap(body, 'TaggedAddresses', errors);
  if (field(body, 'Service').value != null) {
    errors.add('Service', 'Unsupported', 'services are registered through /v1/agent/service/register');
  }
  const checks: CatalogCheck[] = [];
  const one = field(body, 'Check').value;
  if (one !== undefined && one !== null) { const c = parseCheck(one, 'Check', errors); if (c) checks.push(c); }
  const many = field(body, 'Checks').value;
  if (many !== undefined && many !== null) {
    if (!Array.isArray(many)) errors.add('Checks', 'Type', 'must be an array of checks');
    else many.forEach((c, i) => { const parsed = parseCheck(c, `Checks[${i}]`, errors); if (parsed) checks.push(parsed); });
  }
  const id = str('ID');
  const idProblem = id === '' ? undefined : uuidProblem(id);
  if (idProblem !== undefined) errors.broke('ID', 'nodeIdInvalid', { why: idProblem });
  errors.throwIfAny();
  // A re-registration that leaves the id out keeps the node's id.
  const known = api.runtime.state.nodes.get(node)?.id ?? '';
  return {
    t: 'catalog.register', node, id: id === '' ? known : id, address, meta, checks,
    ...(taggedAddresses !== undefined && Object.keys(taggedAddresses).length > 0 ? { taggedAddresses } : {}),
  };
}

/** An object of strings (`NodeMeta`, `TaggedAddresses`), copied; undefined when absent or null. */
function stringMap(body: Record<string, unknown> | undefined, name: string, errors: FieldErrors): Record<string, string> | undefined {
  const raw = field(body, name).value;
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw) || Object.values(raw).some((v) => typeof v !== 'string')) {
    errors.add(name, 'Type', 'must be an object of strings');
    return undefined;
  }
  return { ...(raw as Record<string, string>) };
}

/**
 * Why `text` is no UUID, in the words of the parser Consul checks node IDs with (36 bytes, dashes at 8,
 * 13, 18 and 23, hexadecimal digits between), or undefined when it is one.
 */
function uuidProblem(text: string): string | undefined {
  const b = Buffer.from(text, 'utf8');
  if (b.length !== 36) return 'uuid string is wrong length';
  const dashes = [8, 13, 18, 23];
  if (dashes.some((i) => b[i] !== 0x2d)) return 'uuid is improperly formatted';
  for (const [i, c] of b.entries()) {
    if (dashes.includes(i) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) continue;
    return `encoding/hex: invalid byte: U+${c.toString(16).toUpperCase().padStart(4, '0')} '${String.fromCharCode(c)}'`;
  }
  return undefined;
}

async function register(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const cmd = parseRegister(jsonObject(req, 'structs.RegisterRequest'), api);
  requireAccess(req, 'node', cmd.node, 'write');
  for (const check of cmd.checks) requireCatalogCheckWrite(req, api, cmd.node, check.checkId);
  claimNodeId(req, api, cmd);
  const result = await api.runtime.propose(cmd);
  if (!result.ok) throw new RegistryError('nodeIdTaken', { id: cmd.id, holder: result.detail });
  return json(true);
}

/**
 * A node ID names one node. An ID new to the node that another node holds makes the registration a
 * rename, as in Consul: that node goes (with its services, checks and sessions), so the caller must be
 * able to write it and its services too (catalog-acl.ts). Neither an ID nor a name (compared without regard to case) can be taken from a
 * live node, one whose gossip check is not critical: a registration cannot take over a running agent's
 * node (Consul refuses the name; it would rename the ID's node away).
 */
function claimNodeId(req: Request, api: ApiContext, cmd: CatalogRegister): void {
  const state = api.runtime.state;
  if (cmd.id === '' || state.nodes.get(cmd.node)?.id.toLowerCase() === cmd.id.toLowerCase()) return;
  const holder = state.nodeHoldingId(cmd.id, cmd.node);
  if (holder !== undefined && live(state, holder.node)) throw new RegistryError('nodeIdHeld', { id: cmd.id, holder: holder.node, address: holder.address });
  for (const other of state.nodesNamedLike(cmd.node)) {
    if (other.id.toLowerCase() === cmd.id.toLowerCase()) continue;
    if ((other.id === '' && holder === undefined) || !live(state, other.node)) continue;
    throw new RegistryError('nodeNameReserved', { node: cmd.node, id: cmd.id, holderId: other.id, holder: other.node, address: other.address });
  }
  if (holder === undefined) return;
  requireAccess(req, 'node', holder.node, 'write');
  requireNodeRemoval(req, api, holder.node);
  cmd.replaces = holder.node;
}

/** Whether the node's gossip check is there and not critical: an agent that is running. */
function live(state: RegistryState, node: string): boolean {
  const gossip = state.checkOf(node, gossipCheckId);
  return gossip !== undefined && gossip.status !== 'critical';
}

async function deregister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const body = jsonObject(req, 'structs.DeregisterRequest');
  const node = field(body, 'Node').value;
  const checkId = field(body, 'CheckID').value;
  if (typeof node !== 'string' || node === '') {
    throw new RegistryError('deregisterNodeMissing');
  }
  requireAccess(req, 'node', node, 'write');
  if (checkId !== undefined && checkId !== null && typeof checkId !== 'string') {
    throw new RegistryError('deregisterCheckIdNotString');
  }
  // Go's api.CatalogDeregistration sends "ServiceID" and "CheckID" with every call, empty when unset (no
  // omitempty): an empty one means absent, as in Consul, so such a call deregisters the node.
  const serviceId = field(body, 'ServiceID').value;
  if (serviceId !== undefined && serviceId !== null && serviceId !== '') {
    throw new RegistryError('deregisterServiceUnsupported');
  }
  // Deregistering what is not there is a no-op success, as in Consul.
  if (typeof checkId === 'string' && checkId !== '') {
    requireCatalogCheckRemoval(req, api, node, canonicalCheckId(checkId));
    await api.runtime.propose({ t: 'catalog.deregister', node, checkId: canonicalCheckId(checkId) });
  } else {
    requireNodeRemoval(req, api, node);
    await api.runtime.propose({ t: 'catalog.deregister', node });
  }
  return json(true);
}

export const agentRoutes: Route<ApiContext>[] = [
  { path: '/v1/status/leader', prefix: false, methods: { GET: statusLeader } },
  { path: '/v1/status/peers', prefix: false, methods: { GET: statusPeers } },
  { path: '/v1/agent/self', prefix: false, methods: { GET: self } },
  { path: '/v1/agent/metrics', prefix: false, methods: { GET: metrics }, query: ['format'], produces: { GET: ['application/json', prometheusText] } },
  { path: '/v1/agent/members', prefix: false, methods: { GET: members }, query: ['dc', 'filter', 'wan', 'segment'] },
  { path: '/v1/catalog/datacenters', prefix: false, methods: { GET: datacenters }, query: ['cached'] },
  { path: '/v1/catalog/register', prefix: false, methods: { PUT: register }, query: ['dc'] },
  { path: '/v1/catalog/deregister', prefix: false, methods: { PUT: deregister }, query: ['dc'] },
];
