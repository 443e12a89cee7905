/**
 * The catalog table: nodes with their node-level checks, and service instances with their checks.
 * Removing a node invalidates its sessions; removing a service removes its checks (and so invalidates
 * the sessions bound to them); the reaper's proposal deregisters a service its check machine gives up on.
 */
import { hasEffect, stepCheck } from '../../../machines/index.ts';
import type { CheckRegistration } from '../../domain/commands.ts';
import { isMaintenanceCheck } from '../../domain/maintenance.ts';
import type { ServiceInstance } from '../../domain/types.ts';
import { deregisterCheck, machineContext, passiveDefinition, registerCheck, setStatus } from './checks.ts';
import { serviceChanged, servicesOfNodeChanged } from './service-index.ts';
import { invalidate } from './sessions.ts';
import { fail, ok, type Ctx, type Handler, type Handlers, type Result, type TagsOf } from './types.ts';

const catalogRegister: Handler<'catalog.register'> = (c, cmd) => {
  const { state } = c;
  // A rename (level 5): the node holding the ID now must be the one the proposer saw, and goes. Without
  // `replaces` nothing is checked here, as in older releases, which apply the same entries.
  if (cmd.replaces !== undefined) {
    const holder = state.nodeHoldingId(cmd.id, cmd.node);
    if (holder !== undefined && holder.node !== cmd.replaces) return fail('node-id-taken', holder.node);
    if (holder !== undefined) removeNode(c, holder.node);
  }
  const existing = state.nodes.get(cmd.node);
  const changed = existing === undefined || existing.id !== cmd.id || existing.address !== cmd.address ||
    JSON.stringify(existing.meta) !== JSON.stringify(cmd.meta) || JSON.stringify(existing.taggedAddresses) !== JSON.stringify(cmd.taggedAddresses);
  if (changed) {
    state.setNode({
      id: cmd.id, node: cmd.node, address: cmd.address, meta: cmd.meta, ...(cmd.taggedAddresses !== undefined ? { taggedAddresses: cmd.taggedAddresses } : {}),
      createIndex: existing?.createIndex ?? c.index, modifyIndex: c.index,
    });
    state.catalogIndex = c.index;
    c.effects.push({ t: 'catalog' }, { t: 'node', node: cmd.node });
    servicesOfNodeChanged(c, cmd.node);
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
};

const catalogDeregister: Handler<'catalog.deregister'> = (c, cmd) => {
  if (!c.state.nodes.has(cmd.node)) return fail('unknown-node', cmd.node);
  if (cmd.checkId !== undefined) return deregisterCheck(c, cmd.node, cmd.checkId);
  removeNode(c, cmd.node);
  return ok;
};

/** Removes a node with its services and checks, invalidating its sessions. */
function removeNode(c: Ctx, node: string): void {
  const { state } = c;
  for (const s of state.sessionsOfNode(node)) invalidate(c, s.id, { type: 'node.destroyed' });
  const services = state.servicesOfNode(node);
  for (const service of services) {
    state.services.delete(state.serviceKey(node, service.id));
    c.effects.push({ t: 'service', node, serviceId: service.id });
  }
  for (const name of new Set(services.map((s) => s.service))) serviceChanged(c, name);
  for (const check of state.checksOfNode(node)) {
    state.checks.delete(state.checkKey(node, check.checkId));
    c.effects.push({ t: 'check', node, checkId: check.checkId, serviceId: check.serviceId });
  }
  state.deleteNode(node);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'node', node });
}

const serviceRegister: Handler<'service.register'> = (c, cmd) => {
  const { state } = c;
  if (!state.nodes.has(cmd.node)) return fail('unknown-node', cmd.node);
  const key = state.serviceKey(cmd.node, cmd.service.id);
  const existing = state.services.get(key);
  const instance: ServiceInstance = {
    ...cmd.service, node: cmd.node, createIndex: existing?.createIndex ?? c.index, modifyIndex: c.index,
  };
  state.services.set(key, instance);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'service', node: cmd.node, serviceId: instance.id });
  // An instance registered again under another name leaves its old name.
  if (existing !== undefined && existing.service !== instance.service) serviceChanged(c, existing.service);
  serviceChanged(c, instance.service);
  const listed = new Set(cmd.checks.map((x) => x.checkId));
  // Replacing a service's checks keeps its maintenance check: maintenance is not part of the definition.
  if (cmd.replaceExistingChecks) {
    for (const old of state.checksOfService(cmd.node, instance.id)) if (!listed.has(old.checkId) && !isMaintenanceCheck(old.checkId)) deregisterCheck(c, cmd.node, old.checkId);
  }
  for (const reg of cmd.checks) registerCheck(c, cmd.node, { ...reg, serviceId: instance.id }, 'agent');
  restampServiceChecks(c, instance, listed);
  return ok;
};

/** The service's checks carry its name and tags: keeps those that were not re-registered in step. */
function restampServiceChecks(c: Ctx, instance: ServiceInstance, reregistered: Set<string>): void {
  const { state } = c;
  for (const check of state.checksOfService(instance.node, instance.id)) {
    if (reregistered.has(check.checkId)) continue;
    if (check.serviceName === instance.service && JSON.stringify(check.serviceTags) === JSON.stringify(instance.tags)) continue;
    state.checks.set(state.checkKey(instance.node, check.checkId), { ...check, serviceName: instance.service, serviceTags: instance.tags, modifyIndex: c.index });
    c.effects.push({ t: 'check', node: instance.node, checkId: check.checkId, serviceId: instance.id });
  }
}

function serviceDeregister(c: Ctx, node: string, serviceId: string): Result<'unknown-service'> {
  const { state } = c;
  const instance = state.services.get(state.serviceKey(node, serviceId));
  if (instance === undefined) return fail('unknown-service', serviceId);
  state.services.delete(state.serviceKey(node, serviceId));
  for (const check of state.checksOfService(node, serviceId)) deregisterCheck(c, node, check.checkId);
  state.catalogIndex = c.index;
  c.effects.push({ t: 'catalog' }, { t: 'service', node, serviceId });
  serviceChanged(c, instance.service);
  return ok;
}

const serviceReap: Handler<'service.reap'> = (c, cmd) => {
  const check = c.state.checkOf(cmd.node, cmd.checkId);
  if (check === undefined || check.serviceId !== cmd.serviceId) return fail('stale');
  const next = stepCheck(check.status, machineContext(check), { type: 'reap', criticalSinceMs: cmd.criticalSinceMs, atMs: c.atMs });
  if (!hasEffect(next, 'deregisterService')) return fail('stale');
  return serviceDeregister(c, cmd.node, cmd.serviceId);
};

export const catalogHandlers: Handlers<TagsOf<'catalog'> | TagsOf<'service'>> = {
  'catalog.register': catalogRegister,
  'catalog.deregister': catalogDeregister,
  'service.register': serviceRegister,
  'service.deregister': (c, cmd) => serviceDeregister(c, cmd.node, cmd.serviceId),
  'service.reap': serviceReap,
};
