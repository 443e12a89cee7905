/**
 * Consul's per-service index (registry-state.ts serviceIndexes), kept where the catalog changes: a service
 * name's index moves to the entry's index when one of its instances is registered, changed or removed, when
 * a check of one of them changes, and when a node holding one of them, or a check of that node, changes.
 * A name whose last instance goes loses its index: its readers then see the catalog's index, which that
 * removal set. Every caller also sets the catalog index in the same entry.
 */
import type { Ctx } from './types.ts';

/** The service `name` changed in this entry. */
export function serviceChanged(c: Ctx, name: string): void {
  const { state } = c;
  if (state.hasInstances(name)) state.serviceIndexes.set(name, c.index);
  else state.serviceIndexes.delete(name);
  c.effects.push({ t: 'serviceIndex', name });
}

/** Every service on `node` changed (the node itself or one of its node-level checks did). */
export function servicesOfNodeChanged(c: Ctx, node: string): void {
  for (const name of new Set(c.state.servicesOfNode(node).map((s) => s.service))) serviceChanged(c, name);
}

/** A check of `serviceId` on `node` changed: its service's, or for a node-level check (`''`) every service on the node. */
export function checkOwnerChanged(c: Ctx, node: string, serviceId: string): void {
  if (serviceId === '') {
    servicesOfNodeChanged(c, node);
    return;
  }
  const name = c.state.services.get(c.state.serviceKey(node, serviceId))?.service;
  if (name !== undefined) serviceChanged(c, name);
}
