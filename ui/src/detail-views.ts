/**
 * The service and node detail pages: what the stream shows of one service (its instances, their
 * checks with output, the recent transitions of those checks; from the page's own view of that service)
 * or one node (member status, checks, services, sessions), with the actions the agent allows.
 */
import { instanceActions, nodeMaintenanceAction } from './actions.ts';
import { badge, chips, facts, h, link, section, table, uiPaths } from './dom.ts';
import { checksOf, worst, type HealthEntry } from './model.ts';
import { data, type Page } from './store.ts';
import { checksTable, transitionsTable } from './tables.ts';
import { transitions } from './timeline.ts';

const memberStatus: Record<number, string> = { 0: 'none', 1: 'alive', 2: 'leaving', 3: 'left', 4: 'failed' };

function instancesTable(entries: HealthEntry[]): HTMLElement {
  return table('instances', ['Health', 'Instance', 'Node', 'Address', 'Tags', 'Actions'], entries.map((e) => {
    const status = worst(e.Checks.map((c) => c.Status));
    const address = e.Service.Address !== '' ? e.Service.Address : e.Node.Address;
    return h('tr', { 'data-row': '', 'data-instance': `${e.Node.Node}/${e.Service.ID}`, 'data-status': status },
      h('td', {}, badge(status)),
      h('td', { class: 'mono' }, e.Service.ID),
      h('td', {}, link(uiPaths.node(e.Node.Node), e.Node.Node)),
      h('td', { class: 'mono' }, e.Service.Port !== undefined ? `${address}:${e.Service.Port}` : address),
      h('td', {}, chips(e.Service.Tags ?? [])),
      h('td', {}, instanceActions(e.Node.Node, e.Service.ID, e.Checks)));
  }), 'No instances.');
}

export function servicePage(name: string): Page {
  const root = h('div', { 'data-page': 'service', 'data-name': name });
  const update = () => {
    // The page's own view (`service_health` with its name): a token that may read this service alone gets it.
    const entries = data.serviceName === name ? [...data.service.values()] : [];
    if (entries.length === 0) {
      root.replaceChildren(h('p', { class: 'panel', 'data-gone': '' }, `No instance of the service ${name} is registered.`), link('/ui/services', 'All services'));
      return;
    }
    // Each instance's own checks and its node's checks, once each.
    const checks = checksOf(entries);
    const status = worst([...checks.values()].map((c) => c.Status));
    const tags = [...new Set(entries.flatMap((e) => e.Service.Tags ?? []))];
    const history = transitions.filter((t) => t.kind === 'health' && (t.service === name || entries.some((e) => e.Node.Node === t.node && t.service === '')));
    root.replaceChildren(
      facts([['Health', badge(status)], ['Instances', String(entries.length)], ['Tags', chips(tags)]]),
      section('Instances', {}, instancesTable(entries)),
      section('Checks', {}, checksTable('service-checks', [...checks.values()], 'No checks: the instances count as passing.')),
      section('Recent transitions', {}, h('p', { class: 'muted' }, 'Changes of these checks seen by this page (the last 15 minutes), with the output each had then.'),
        transitionsTable('service-history', history, 'No transitions since this page opened.')));
  };
  return { title: `Service ${name}`, root, needs: ['service'], update };
}

export function nodePage(name: string): Page {
  const root = h('div', { 'data-page': 'node', 'data-name': name });
  const update = () => {
    const checks = [...data.checks.values()].filter((c) => c.Node === name);
    const entries = [...data.entries.values()].filter((e) => e.Node.Node === name);
    const sessions = [...data.sessions.values()].filter((s) => s.Node === name);
    const catalog = data.nodes.find((n) => n.Node === name);
    const member = data.members.find((m) => m.Name === name);
    if (catalog === undefined && checks.length === 0 && entries.length === 0) {
      root.replaceChildren(h('p', { class: 'panel', 'data-gone': '' }, `The node ${name} is not in the catalog.`), link('/ui/nodes', 'All nodes'));
      return;
    }
    const status = worst(checks.filter((c) => c.ServiceID === '').map((c) => c.Status));
    const memberText = member === undefined ? h('span', { class: 'muted' }, 'not a member') : h('span', { class: `member ${memberStatus[member.Status] ?? ''}`, 'data-member': memberStatus[member.Status] ?? String(member.Status) }, memberStatus[member.Status] ?? String(member.Status));
    root.replaceChildren(
      facts([
        ['Health', badge(status)], ['Address', h('span', { class: 'mono' }, catalog?.Address ?? entries[0]?.Node.Address ?? '')],
        ['Member', memberText], ['Meta', chips(Object.entries(catalog?.Meta ?? {}).map(([k, v]) => `${k}=${v}`), 'chip meta')],
      ]),
      h('div', { class: 'actions' }, nodeMaintenanceAction(name)),
      section('Checks', {}, checksTable('node-checks', checks, 'No checks on this node.')),
      section('Services', {}, table('node-services', ['Health', 'Service', 'Instance', 'Port'], entries.map((e) =>
        h('tr', { 'data-row': '', 'data-instance': e.Service.ID },
          h('td', {}, badge(worst(e.Checks.map((c) => c.Status)))),
          h('td', {}, link(uiPaths.service(e.Service.Service), e.Service.Service)),
          h('td', { class: 'mono' }, e.Service.ID),
          h('td', {}, e.Service.Port !== undefined ? String(e.Service.Port) : '—'))), 'No services on this node.')),
      section('Sessions', {}, table('node-sessions', ['Session', 'Behavior', 'TTL'], sessions.map((s) =>
        h('tr', { 'data-row': '', 'data-session': s.ID },
          h('td', {}, link(uiPaths.session(s.ID), s.Name !== '' ? s.Name : s.ID)),
          h('td', {}, s.Behavior),
          h('td', {}, s.TTL !== '' ? s.TTL : '—'))), 'No sessions on this node.')));
  };
  return { title: `Node ${name}`, root, needs: ['entries', 'checks', 'sessions'], update };
}
