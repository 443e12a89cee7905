/**
 * Apply for the catalog and health half: nodes, services, checks and check results. The check's
 * status is decided by machines/check.ts (thresholds, TTL lapse, deregister-after); this file stores
 * what it decides and invalidates the sessions bound to a check that turns critical or disappears.
 */
import { stepCheck, type CheckContext, type CheckEvent } from '../../machines/index.ts';
import type {
  CatalogDeregister, CatalogRegister, CheckRegistration, CheckTtlExpire, CheckUpdate, ServiceReap, ServiceRegister,
} from '../domain/commands.ts';
import type { CheckDefinition, CheckStatus, HealthCheck, ServiceInstance } from '../domain/types.ts';
import type { Result } from './apply.ts';
import type { Ctx } from './ctx.ts';

const ok: Result = { ok: true };

/** The definition of a check that nothing probes (catalog checks, gossipHealth). */
export const passiveDefinition: CheckDefinition = {
  intervalMs: 0, timeoutMs: 0, ttlMs: 0, interval: '', timeout: '', deregisterCriticalServiceAfterMs: 0,
  successBeforePassing: 0, failuresBeforeWarning: 0, failuresBeforeCritical: 0, outputMaxSize: 4096,
};

function touched(c: Ctx, node: string, checkId: string, serviceId: string): void {
  c.state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'check', node, checkId, serviceId });
}

// ---------------------------------------------------------------- nodes (catalog)

export function catalogRegister(c: Ctx, cmd: CatalogRegister): Result {
  const { state } = c;
  const existing = state.nodes.get(cmd.node);
  const changed = existing === undefined || existing.id !== cmd.id || existing.address !== cmd.address ||
    JSON.stringify(existing.meta) !== JSON.stringify(cmd.meta);
  if (changed) {
    state.nodes.set(cmd.node, {
      id: cmd.id, node: cmd.node, address: cmd.address, meta: cmd.meta,
      createIndex: existing?.createIndex ?? c.index, modifyIndex: c.index,
    });
    state.catalogIndex = c.index;
    c.effects.push({ t: 'catalog' }, { t: 'node', node: cmd.node });
  }
  for (const check of cmd.checks) {
    const registration: CheckRegistration = {
      checkId: check.checkId, name: check.name, notes: check.notes, status: check.status, output: check.output,
      serviceId: '', type: '', definition: passiveDefinition,
    };
    const current = state.checkOf(cmd.node, check.checkId);
    if (current === undefined || current.name !== check.name || current.notes !== check.notes) {
      registerCheck(c, cmd.node, registration, 'catalog');
    }
    setStatus(c, state.checkOf(cmd.node, check.checkId)!, check.status, check.output);
  }
  return ok;
}

export function catalogDeregister(c: Ctx, cmd: CatalogDeregister, invalidateSession: (id: string) => void): Result {
  const { state } = c;
  if (!state.nodes.has(cmd.node)) return { ok: false, reason: 'unknown-node', detail: cmd.node };
  if (cmd.checkId !== undefined) return deregisterCheck(c, cmd.node, cmd.checkId);
  for (const s of state.sessionsOfNode(cmd.node)) invalidateSession(s.id);
  for (const service of state.servicesOfNode(cmd.node)) {
    state.services.delete(state.serviceKey(cmd.node, service.id));
    c.effects.push({ t: 'service', node: cmd.node, serviceId: service.id });
  }
  for (const check of state.checksOfNode(cmd.node)) {
    state.checks.delete(state.checkKey(cmd.node, check.checkId));
    c.effects.push({ t: 'check', node: cmd.node, checkId: check.checkId, serviceId: check.serviceId });
  }
  state.nodes.delete(cmd.node);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'node', node: cmd.node });
  return ok;
}

// ---------------------------------------------------------------- checks

function machineContext(check: HealthCheck): CheckContext {
  const d = check.definition;
  return {
    successBeforePassing: d.successBeforePassing, failuresBeforeWarning: d.failuresBeforeWarning,
    failuresBeforeCritical: d.failuresBeforeCritical, successCounter: check.successCounter,
    failuresCounter: check.failuresCounter, ttlMs: d.ttlMs, ttlUpdateIndex: check.ttlUpdateIndex,
    deregisterAfterMs: d.deregisterCriticalServiceAfterMs, criticalSinceMs: check.criticalSinceMs,
  };
}

/**
 * Registers or replaces a check. A re-registration keeps the current status and output (Consul's
 * anti-flap rule) but starts a new generation: the runner restarts and old results become no-ops.
 */
export function registerCheck(c: Ctx, node: string, reg: CheckRegistration, source: HealthCheck['source']): Result {
  const { state } = c;
  if (!state.nodes.has(node)) return { ok: false, reason: 'unknown-node', detail: node };
  const service = reg.serviceId === '' ? undefined : state.services.get(state.serviceKey(node, reg.serviceId));
  if (reg.serviceId !== '' && service === undefined) return { ok: false, reason: 'unknown-service', detail: reg.serviceId };
  const existing = state.checkOf(node, reg.checkId);
  const status = existing?.status ?? reg.status;
  const d = reg.definition;
  const check: HealthCheck = {
    node, checkId: reg.checkId, name: reg.name, status, notes: reg.notes, output: existing?.output ?? reg.output,
    serviceId: reg.serviceId, serviceName: service?.service ?? '', serviceTags: service?.tags ?? [],
    type: reg.type, definition: d, source, generation: c.index,
    // Counters start at their thresholds, so the first result after registration applies at once.
    successCounter: d.successBeforePassing, failuresCounter: Math.max(d.failuresBeforeCritical, d.failuresBeforeWarning),
    ttlUpdateIndex: c.index, criticalSinceMs: status === 'critical' ? (existing?.criticalSinceMs || c.atMs) : 0,
    createIndex: existing?.createIndex ?? c.index, modifyIndex: c.index,
  };
  state.checks.set(state.checkKey(node, check.checkId), check);
  touched(c, node, check.checkId, check.serviceId);
  if (check.status === 'critical' && existing?.status !== 'critical') {
    c.invalidateBoundTo(node, check.checkId, { type: 'check.critical', checkId: check.checkId });
  }
  return ok;
}

export function deregisterCheck(c: Ctx, node: string, checkId: string): Result {
  const { state } = c;
  const existing = state.checkOf(node, checkId);
  if (existing === undefined) return { ok: false, reason: 'unknown-check', detail: checkId };
  state.checks.delete(state.checkKey(node, checkId));
  touched(c, node, checkId, existing.serviceId);
  c.invalidateBoundTo(node, checkId, { type: 'check.deregistered', checkId });
  return ok;
}

/** Writes a status and output decided elsewhere (catalog registration): no thresholds. */
function setStatus(c: Ctx, check: HealthCheck, status: CheckStatus, output: string): void {
  if (check.status === status && check.output === output) return;
  step(c, check, { type: 'set', status, index: c.index, atMs: c.atMs, restartsTtl: false }, output);
}

/** Steps the check's machine and stores what it decided; invalidates bound sessions on critical. */
function step(c: Ctx, check: HealthCheck, event: CheckEvent, output: string): boolean {
  const next = stepCheck(check.status, machineContext(check), event);
  const reported = next.effects.find((e) => e.type === 'report')?.params as { status: CheckStatus } | undefined;
  const before = check.status;
  const updated: HealthCheck = {
    ...check,
    successCounter: next.context.successCounter, failuresCounter: next.context.failuresCounter,
    ttlUpdateIndex: next.context.ttlUpdateIndex, criticalSinceMs: next.context.criticalSinceMs,
  };
  if (reported !== undefined) {
    updated.status = reported.status;
    updated.output = output;
  }
  const visible = updated.status !== check.status || updated.output !== check.output;
  const ttlRestarted = updated.ttlUpdateIndex !== check.ttlUpdateIndex;
  if (!visible && !ttlRestarted && updated.successCounter === check.successCounter && updated.failuresCounter === check.failuresCounter) {
    return false;
  }
  if (visible) updated.modifyIndex = c.index;
  c.state.checks.set(c.state.checkKey(check.node, check.checkId), updated);
  if (visible) touched(c, check.node, check.checkId, check.serviceId);
  else if (ttlRestarted) c.effects.push({ t: 'check', node: check.node, checkId: check.checkId, serviceId: check.serviceId });
  if (updated.status === 'critical' && before !== 'critical') {
    c.invalidateBoundTo(check.node, check.checkId, { type: 'check.critical', checkId: check.checkId });
  }
  return true;
}

export function checkUpdate(c: Ctx, cmd: CheckUpdate): Result {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined) return { ok: false, reason: 'unknown-check', detail: cmd.checkId };
  if (check.generation !== cmd.generation) return { ok: false, reason: 'stale' };
  const event: CheckEvent = cmd.via === 'probe'
    ? { type: 'result', status: cmd.status, atMs: c.atMs }
    : { type: 'set', status: cmd.status, index: c.index, atMs: c.atMs, restartsTtl: cmd.via === 'ttl' };
  step(c, check, event, cmd.output);
  return ok;
}

export function checkTtlExpire(c: Ctx, cmd: CheckTtlExpire): Result {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined) return { ok: false, reason: 'unknown-check', detail: cmd.checkId };
  const output = check.output === '' ? 'TTL expired' : `TTL expired (last output before timeout follows): ${check.output}`;
  const expired = step(c, check, { type: 'ttl.lapse', ttlUpdateIndex: cmd.ttlUpdateIndex, atMs: c.atMs }, output);
  return expired ? ok : { ok: false, reason: 'stale' };
}

// ---------------------------------------------------------------- services

export function serviceRegister(c: Ctx, cmd: ServiceRegister): Result {
  const { state } = c;
  if (!state.nodes.has(cmd.node)) return { ok: false, reason: 'unknown-node', detail: cmd.node };
  const key = state.serviceKey(cmd.node, cmd.service.id);
  const existing = state.services.get(key);
  const instance: ServiceInstance = {
    ...cmd.service, node: cmd.node, createIndex: existing?.createIndex ?? c.index, modifyIndex: c.index,
  };
  state.services.set(key, instance);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'service', node: cmd.node, serviceId: instance.id });
  const listed = new Set(cmd.checks.map((x) => x.checkId));
  if (cmd.replaceExistingChecks) {
    for (const old of state.checksOfService(cmd.node, instance.id)) if (!listed.has(old.checkId)) deregisterCheck(c, cmd.node, old.checkId);
  }
  for (const reg of cmd.checks) registerCheck(c, cmd.node, { ...reg, serviceId: instance.id }, 'agent');
  // The service's checks carry its name and tags: keep those that were not re-registered in step.
  for (const check of state.checksOfService(cmd.node, instance.id)) {
    if (listed.has(check.checkId)) continue;
    if (check.serviceName === instance.service && JSON.stringify(check.serviceTags) === JSON.stringify(instance.tags)) continue;
    state.checks.set(state.checkKey(cmd.node, check.checkId), { ...check, serviceName: instance.service, serviceTags: instance.tags, modifyIndex: c.index });
    c.effects.push({ t: 'check', node: cmd.node, checkId: check.checkId, serviceId: instance.id });
  }
  return ok;
}

export function serviceDeregister(c: Ctx, node: string, serviceId: string): Result {
  const { state } = c;
  if (!state.services.delete(state.serviceKey(node, serviceId))) return { ok: false, reason: 'unknown-service', detail: serviceId };
  for (const check of state.checksOfService(node, serviceId)) deregisterCheck(c, node, check.checkId);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'service', node, serviceId });
  return ok;
}

export function serviceReap(c: Ctx, cmd: ServiceReap): Result {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined || check.serviceId !== cmd.serviceId) return { ok: false, reason: 'stale' };
  const next = stepCheck(check.status, machineContext(check), { type: 'reap', criticalSinceMs: cmd.criticalSinceMs, atMs: c.atMs });
  if (!next.effects.some((e) => e.type === 'deregisterService')) return { ok: false, reason: 'stale' };
  return serviceDeregister(c, cmd.node, cmd.serviceId);
}

/** Whether a probe result would change the check (status, output or threshold counters). */
export function probeResultChanges(check: HealthCheck, status: CheckStatus, output: string): boolean {
  const next = stepCheck(check.status, machineContext(check), { type: 'result', status, atMs: 0 });
  const reported = next.effects.some((e) => e.type === 'report');
  if (reported && (next.value !== check.status || output !== check.output)) return true;
  return next.context.successCounter !== check.successCounter || next.context.failuresCounter !== check.failuresCounter;
}
