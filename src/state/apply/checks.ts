/**
 * The checks table: registration, removal and results. The check's status is decided by
 * machines/check.ts (thresholds, TTL lapse, deregister-after); this file stores what it decides and
 * invalidates the sessions bound to a check that turns critical or disappears.
 */
import { effectOf, hasEffect, stepCheck, type CheckContext, type CheckEvent } from '../../../machines/index.ts';
import type { CheckRegistration } from '../../domain/commands.ts';
import type { CheckDefinition, CheckStatus, HealthCheck } from '../../domain/types.ts';
import { checkOwnerChanged } from './service-index.ts';
import { invalidateBoundTo } from './sessions.ts';
import { fail, ok, type Ctx, type Handler, type Handlers, type Result, type TagsOf } from './types.ts';

/** The definition of a check that nothing probes (catalog checks, gossipHealth). */
export const passiveDefinition: CheckDefinition = {
  intervalMs: 0, timeoutMs: 0, ttlMs: 0, interval: '', timeout: '', deregisterCriticalServiceAfterMs: 0,
  successBeforePassing: 0, failuresBeforeWarning: 0, failuresBeforeCritical: 0, outputMaxSize: 4096,
};

function touched(c: Ctx, node: string, checkId: string, serviceId: string): void {
  c.state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'check', node, checkId, serviceId });
  checkOwnerChanged(c, node, serviceId);
}

export function machineContext(check: HealthCheck): CheckContext {
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
export function registerCheck(
  c: Ctx, node: string, reg: CheckRegistration, source: HealthCheck['source'],
): Result<'unknown-node' | 'unknown-service'> {
  const { state } = c;
  if (!state.nodes.has(node)) return fail('unknown-node', node);
  const service = reg.serviceId === '' ? undefined : state.services.get(state.serviceKey(node, reg.serviceId));
  if (reg.serviceId !== '' && service === undefined) return fail('unknown-service', reg.serviceId);
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
  // A check registered again under another service (or the node) leaves its old one: both are told.
  if (existing !== undefined && existing.serviceId !== check.serviceId) {
    c.effects.push({ t: 'check', node, checkId: check.checkId, serviceId: existing.serviceId });
    checkOwnerChanged(c, node, existing.serviceId);
  }
  touched(c, node, check.checkId, check.serviceId);
  if (check.status === 'critical' && existing?.status !== 'critical') {
    invalidateBoundTo(c, node, check.checkId, { type: 'check.critical', checkId: check.checkId });
  }
  return ok;
}

export function deregisterCheck(c: Ctx, node: string, checkId: string): Result<'unknown-check'> {
  const { state } = c;
  const existing = state.checkOf(node, checkId);
  if (existing === undefined) return fail('unknown-check', checkId);
  state.checks.delete(state.checkKey(node, checkId));
  touched(c, node, checkId, existing.serviceId);
  invalidateBoundTo(c, node, checkId, { type: 'check.deregistered', checkId });
  return ok;
}

/** Writes a status and output decided elsewhere (catalog registration): no thresholds. */
export function setStatus(c: Ctx, check: HealthCheck, status: CheckStatus, output: string): void {
  if (check.status === status && check.output === output) return;
  step(c, check, { type: 'set', status, index: c.index, atMs: c.atMs, restartsTtl: false }, output);
}

/** Steps the check's machine and stores what it decided; invalidates bound sessions on critical. */
function step(c: Ctx, check: HealthCheck, event: CheckEvent, output: string): boolean {
  const next = stepCheck(check.status, machineContext(check), event);
  const reported = effectOf(next, 'report');
  const before = check.status;
  const updated: HealthCheck = {
    ...check,
    successCounter: next.context.successCounter, failuresCounter: next.context.failuresCounter,
    ttlUpdateIndex: next.context.ttlUpdateIndex, criticalSinceMs: next.context.criticalSinceMs,
  };
  if (reported !== undefined) {
    updated.status = reported.params.status;
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
    invalidateBoundTo(c, check.node, check.checkId, { type: 'check.critical', checkId: check.checkId });
  }
  return true;
}

const checkUpdate: Handler<'check.update'> = (c, cmd) => {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined) return fail('unknown-check', cmd.checkId);
  if (check.generation !== cmd.generation) return fail('stale');
  const event: CheckEvent = cmd.via === 'probe'
    ? { type: 'result', status: cmd.status, atMs: c.atMs }
    : { type: 'set', status: cmd.status, index: c.index, atMs: c.atMs, restartsTtl: cmd.via === 'ttl' };
  step(c, check, event, cmd.output);
  return ok;
};

const checkTtlExpire: Handler<'check.ttlExpire'> = (c, cmd) => {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined) return fail('unknown-check', cmd.checkId);
  const output = check.output === '' ? 'TTL expired' : `TTL expired (last output before timeout follows): ${check.output}`;
  const expired = step(c, check, { type: 'ttl.lapse', ttlUpdateIndex: cmd.ttlUpdateIndex, atMs: c.atMs }, output);
  return expired ? ok : fail('stale');
};

export const checkHandlers: Handlers<TagsOf<'check'>> = {
  'check.register': (c, cmd) => registerCheck(c, cmd.node, cmd.check, 'agent'),
  'check.deregister': (c, cmd) => deregisterCheck(c, cmd.node, cmd.checkId),
  'check.update': checkUpdate,
  'check.ttlExpire': checkTtlExpire,
};

/**
 * What a probe result would change: nothing; only the output (the same status, the threshold counters at
 * rest); only the threshold counters (a result below its threshold: the output is not written); or it is
 * reported — written with its status and output — while the status or the counters move.
 */
export type ProbeResultChange = 'none' | 'output' | 'counters' | 'reported';

export function probeResultChange(check: HealthCheck, status: CheckStatus, output: string): ProbeResultChange {
  const next = stepCheck(check.status, machineContext(check), { type: 'result', status, atMs: 0 });
  const reported = hasEffect(next, 'report');
  if (next.value !== check.status) return 'reported';
  if (next.context.successCounter !== check.successCounter || next.context.failuresCounter !== check.failuresCounter) return reported ? 'reported' : 'counters';
  return reported && output !== check.output ? 'output' : 'none';
}
