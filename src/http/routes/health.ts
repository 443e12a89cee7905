/**
 * The local agent's checks and services (consul-compat.md §1.3–1.4): lists, registration, TTL updates and
 * deregistration. Writes validate with src/http/definitions.ts and go through the log; the catalog and
 * health reads are in catalog.ts.
 */
import type { Command } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { CheckStatus, HealthCheck } from '../../domain/types.ts';
import { agentServiceSchema, checkSchema } from '../../filter/index.ts';
import { filterOf } from '../filtering.ts';
import type { Result } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import { requireAliasRead, requireCheckRegistration, requireOwnerWrite, requireReplacedOwnerWrite } from './check-acl.ts';
import { FieldErrors, goJsonKind, jsonBody, jsonObject } from '../body.ts';
import { checkOutputBytesMax } from '../../domain/limits.ts';
import { parseCheck, parseService } from '../definitions.ts';
import { checkDatacenter } from '../query.ts';
import { json, type Reply } from '../reply.ts';
import { param, readableUnder, type Request } from '../request.ts';
import { noBody } from '../negotiation.ts';
import type { Route } from '../router.ts';
import { catalogAcl, everything, required } from './catalog-read.ts';
import { renderAgentService, renderCheck } from './catalog-render.ts';

/** This agent's checks as it knows them: with an output held back by check_update_interval, as Consul's agent shows it. */
function localChecks(api: ApiContext): HealthCheck[] {
  return api.runtime.state.checksOfNode(api.nodeName).filter((c) => c.source === 'agent').map((c) => api.runtime.checkOwner.latest(c));
}

function failureError(r: Extract<Result, { ok: false }>): RegistryError {
  if (r.reason === 'unknown-service') return new RegistryError('checkServiceNotFound', { id: r.detail ?? '' });
  if (r.reason === 'unknown-check') return new RegistryError('checkNotFound', { id: r.detail ?? '' });
  return new RegistryError('registrationFailed', { reason: r.reason });
}

async function proposeOk(api: ApiContext, cmd: Command): Promise<void> {
  const result = await api.runtime.propose(cmd);
  if (!result.ok) throw failureError(result);
}

// ---------------------------------------------------------------- agent checks

async function agentChecks(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const filter = filterOf(req, checkSchema);
  const readable = readableUnder(req, 'check', '') ?? everything;
  const rendered = localChecks(api).filter((c) => readable(c.checkId)).map((c) => [c.checkId, renderCheck(c, true)] as const);
  return json(Object.fromEntries(await filter.keep(rendered, ([, check]) => check)));
}

async function checkRegister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const reg = parseCheck(jsonBody(req) ?? {}, { scriptsAllowed: api.enableScriptChecks, origin: 'remote', dialect: api.dialect });
  requireCheckRegistration(req, api, reg.checkId, reg.serviceId);
  requireAliasRead(req, api, reg.definition);
  await proposeOk(api, { t: 'check.register', node: api.nodeName, check: reg });
  return { t: 'empty' };
}

function localCheck(req: Request, api: ApiContext): HealthCheck {
  const id = required(req, 'checkIdMissing');
  const check = api.runtime.state.checkOf(api.nodeName, id);
  if (check === undefined || check.source !== 'agent') throw new RegistryError('checkNotFound', { id });
  // Its status decides its service's health, or the node's (check-acl.ts).
  requireOwnerWrite(req, api, check.serviceId, () => new RegistryError('checkNotFound', { id }));
  return check;
}

async function checkDeregister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const check = localCheck(req, api);
  await proposeOk(api, { t: 'check.deregister', node: api.nodeName, checkId: check.checkId });
  return { t: 'empty' };
}

/** TTL updates keep the first 4 KB of the output, marking what was cut (consul-compat.md §4 Output cap). */
function capTtlOutput(output: string, maxBytes: number): string {
  const bytes = Buffer.from(output);
  if (bytes.length <= maxBytes) return output;
  return `${bytes.subarray(0, maxBytes).toString()} ... (captured ${maxBytes} of ${bytes.length} bytes)`;
}

async function ttlUpdate(req: Request, api: ApiContext, status: CheckStatus, output: string): Promise<Reply> {
  checkDatacenter(req, api);
  const check = localCheck(req, api);
  if (check.type !== 'ttl') {
    throw new RegistryError('checkNotTtl', { checkId: check.checkId, type: check.type });
  }
  await proposeOk(api, {
    t: 'check.update', node: api.nodeName, checkId: check.checkId, generation: check.generation, via: 'ttl', status,
    output: capTtlOutput(output, check.definition.outputMaxSize || checkOutputBytesMax),
  });
  return { t: 'empty' };
}

const ttlSetter = (status: CheckStatus) => (req: Request, api: ApiContext) => ttlUpdate(req, api, status, param(req, 'note') ?? '');

const checkStatuses = new Set(['passing', 'warning', 'critical']);
/** The fields of Consul's checkUpdate, by their names lower-cased. */
const updateFields = new Map<string, 'Status' | 'Output'>([['status', 'Status'], ['output', 'Output']]);

/**
 * The update body read as Go's decoder reads it into Consul's checkUpdate: a key names its field without
 * regard to case, the last one given wins, and a null changes nothing (a field not given is empty). An
 * unknown key, as Consul's decoder refuses them here as in its register bodies, or a value that is not a
 * string is refused, the first in the body giving the consul dialect's text.
 */
function readCheckUpdate(req: Request): { Status: string; Output: string } {
  const read = { Status: '', Output: '' };
  const errors = new FieldErrors();
  for (const [key, value] of Object.entries(jsonObject(req, 'agent.checkUpdate') ?? {})) {
    const name = updateFields.get(key.toLowerCase());
    if (name === undefined) errors.broke(key, 'fieldUnknown', { field: key });
    else if (value === null) continue;
    else if (typeof value === 'string') read[name] = value;
    else errors.broke(name, 'valueNotString', { goField: `checkUpdate.${name}`, got: goJsonKind(value) });
  }
  errors.throwIfAny();
  return read;
}

async function checkUpdate(req: Request, api: ApiContext): Promise<Reply> {
  const { Status: status, Output: output } = readCheckUpdate(req);
  if (!checkStatuses.has(status)) throw new RegistryError('checkStatusInvalid', { status });
  return ttlUpdate(req, api, status as CheckStatus, output);
}

// ---------------------------------------------------------------- agent services

async function agentServices(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const filter = filterOf(req, agentServiceSchema);
  const { service } = catalogAcl(req);
  const rendered = api.runtime.state.servicesOfNode(api.nodeName).filter((s) => service(s.service)).map((s) => [s.id, renderAgentService(s, api.datacenter)] as const);
  return json(Object.fromEntries(await filter.keep(rendered, ([, service]) => service)));
}

async function serviceRegister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const replace = param(req, 'replace-existing-checks');
  const parsed = parseService(jsonBody(req) ?? {}, { scriptsAllowed: api.enableScriptChecks, origin: 'remote', dialect: api.dialect });
  requireAccess(req, 'service', parsed.service.service, 'write');
  // Registering over an instance of another name replaces that service: the caller must be able to write it
  // too, and is not told its name when it may not read it.
  const st = api.runtime.state;
  const replaced = st.services.get(st.serviceKey(api.nodeName, parsed.service.id))?.service;
  if (replaced !== undefined && replaced !== parsed.service.service) {
    requireOwnerWrite(req, api, parsed.service.id, () => new RegistryError('serviceIdDenied', { id: parsed.service.id }));
  }
  for (const check of parsed.checks) {
    requireReplacedOwnerWrite(req, api, check.checkId, parsed.service.id);
    requireAliasRead(req, api, check.definition);
  }
  await proposeOk(api, {
    t: 'service.register', node: api.nodeName, service: parsed.service, checks: parsed.checks,
    replaceExistingChecks: replace !== undefined && (replace === '' || replace === 'true'),
  });
  return { t: 'empty' };
}

async function serviceDeregister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const id = required(req, 'serviceIdMissing');
  const instance = api.runtime.state.services.get(api.runtime.state.serviceKey(api.nodeName, id));
  if (instance === undefined) throw new RegistryError('serviceNotFound', { id });
  requireOwnerWrite(req, api, id, () => new RegistryError('serviceNotFound', { id }));
  await proposeOk(api, { t: 'service.deregister', node: api.nodeName, serviceId: id });
  return { t: 'empty' };
}

export const healthRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/checks', prefix: false, methods: { GET: agentChecks }, query: ['dc', 'filter'] },
  { path: '/v1/agent/check/register', prefix: false, methods: { PUT: checkRegister }, query: ['dc'], produces: { PUT: noBody } },
  { path: '/v1/agent/check/deregister/', prefix: true, methods: { PUT: checkDeregister }, query: ['dc'], produces: { PUT: noBody } },
  { path: '/v1/agent/check/pass/', prefix: true, methods: { PUT: ttlSetter('passing') }, query: ['dc', 'note'], produces: { PUT: noBody } },
  { path: '/v1/agent/check/warn/', prefix: true, methods: { PUT: ttlSetter('warning') }, query: ['dc', 'note'], produces: { PUT: noBody } },
  { path: '/v1/agent/check/fail/', prefix: true, methods: { PUT: ttlSetter('critical') }, query: ['dc', 'note'], produces: { PUT: noBody } },
  { path: '/v1/agent/check/update/', prefix: true, methods: { PUT: checkUpdate }, query: ['dc'], produces: { PUT: noBody } },
  { path: '/v1/agent/services', prefix: false, methods: { GET: agentServices }, query: ['dc', 'filter'] },
  { path: '/v1/agent/service/register', prefix: false, methods: { PUT: serviceRegister }, query: ['dc', 'replace-existing-checks'], produces: { PUT: noBody } },
  { path: '/v1/agent/service/deregister/', prefix: true, methods: { PUT: serviceDeregister }, query: ['dc'], produces: { PUT: noBody } },
];
