/**
 * The operator's actions, each a button that asks first (confirm.ts) and calls the agent's API:
 * invalidate a session, pass/warn/fail a TTL check, deregister a check or a service instance, and
 * toggle maintenance of a service instance or of the node. The agent endpoints (/v1/agent/...) act on
 * this agent's own node, so those buttons show only on its checks and services; elsewhere the page
 * says which agent to ask. Whether the token may is for the agent to say: its refusal is shown.
 */
import { encodePath, send } from './api.ts';
import { confirmAction } from './confirm.ts';
import { button, h } from './dom.ts';
import type { Check, Session } from './model.ts';
import { data } from './store.ts';

const note = encodeURIComponent('set from the dashboard');
const enc = encodeURIComponent;

export const nodeMaintenanceId = '_node_maintenance';
export const serviceMaintenanceId = (serviceId: string) => `_service_maintenance:${serviceId}`;

/** True when the agent endpoints can act on `node` (this agent's node, or not known yet). */
export function local(node: string): boolean {
  return data.self === undefined || data.self === node;
}

function elsewhere(node: string): HTMLElement {
  return h('span', { class: 'muted', title: 'The /v1/agent endpoints act on their own agent’s node' }, `via ${node}’s agent`);
}

export function checkActions(c: Check): HTMLElement {
  if (!local(c.Node)) return elsewhere(c.Node);
  const what = `the check ${c.CheckID} on ${c.Node}`;
  const ttl = c.Type === 'ttl'
    ? (['pass', 'warn', 'fail'] as const).map((verb) => button(verb[0]!.toUpperCase() + verb.slice(1), { class: 'quiet small', 'data-action': `check-${verb}` }, () =>
      confirmAction(`Mark ${what} ${verb === 'pass' ? 'passing' : verb === 'warn' ? 'warning' : 'critical'}?`, verb === 'fail' ? 'Fail it' : verb === 'warn' ? 'Warn' : 'Pass', async () => {
        await send('PUT', `/v1/agent/check/${verb}/${enc(c.CheckID)}?note=${note}`);
        return `${c.CheckID}: ${verb}`;
      })))
    : [];
  const deregister = button('Deregister', { class: 'quiet small', 'data-action': 'check-deregister' }, () =>
    confirmAction(`Deregister ${what}? Sessions bound to it are invalidated.`, 'Deregister', async () => {
      await send('PUT', `/v1/agent/check/deregister/${enc(c.CheckID)}`);
      return `Deregistered ${c.CheckID}`;
    }));
  return h('span', { class: 'actions tight' }, ...ttl, deregister);
}

/** `checks`: the instance's (its health entry's), among them its maintenance check when it has one. */
export function instanceActions(node: string, serviceId: string, checks: readonly Check[]): HTMLElement {
  if (!local(node)) return elsewhere(node);
  const inMaintenance = checks.some((c) => c.CheckID === serviceMaintenanceId(serviceId));
  const maintenance = button(inMaintenance ? 'End maintenance' : 'Maintenance', { class: 'quiet small', 'data-action': 'service-maintenance', 'data-enabled': String(inMaintenance) }, () =>
    confirmAction(inMaintenance ? `Take the instance ${serviceId} out of maintenance?` : `Put the instance ${serviceId} in maintenance? It leaves every passing answer until it is taken out.`,
      inMaintenance ? 'End maintenance' : 'Enable maintenance', async () => {
        await send('PUT', `/v1/agent/service/maintenance/${enc(serviceId)}?enable=${!inMaintenance}${inMaintenance ? '' : `&reason=${note}`}`);
        return `${serviceId}: maintenance ${inMaintenance ? 'off' : 'on'}`;
      }));
  const deregister = button('Deregister', { class: 'quiet small', 'data-action': 'service-deregister' }, () =>
    confirmAction(`Deregister the instance ${serviceId} on ${node}, with its checks?`, 'Deregister', async () => {
      await send('PUT', `/v1/agent/service/deregister/${enc(serviceId)}`);
      return `Deregistered ${serviceId}`;
    }));
  return h('span', { class: 'actions tight' }, maintenance, deregister);
}

/** `on`: the node's checks include the maintenance check. */
export function nodeMaintenanceAction(node: string, on: boolean): HTMLElement {
  if (!local(node)) return elsewhere(node);
  return button(on ? 'End node maintenance' : 'Node maintenance', { class: on ? '' : 'quiet', 'data-action': 'node-maintenance', 'data-enabled': String(on) }, () =>
    confirmAction(on ? `Take the node ${node} out of maintenance?` : `Put the node ${node} in maintenance? Every service on it leaves the passing answers.`,
      on ? 'End maintenance' : 'Enable maintenance', async () => {
        await send('PUT', `/v1/agent/maintenance?enable=${!on}${on ? '' : `&reason=${note}`}`);
        return `${node}: maintenance ${on ? 'off' : 'on'}`;
      }));
}

export function invalidateAction(s: Session): HTMLElement {
  return button('Invalidate…', { class: 'danger', 'data-action': 'session-invalidate' }, () =>
    confirmAction(`Invalidate the session ${s.Name !== '' ? `“${s.Name}” ` : ''}${s.ID}? Its locks are ${s.Behavior === 'delete' ? 'deleted' : 'released'}.`, 'Invalidate', async () => {
      await send('PUT', `/v1/session/destroy/${encodePath(s.ID)}`);
      return `Invalidated ${s.ID}`;
    }));
}
