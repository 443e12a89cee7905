/**
 * The service and node detail pages: what the stream shows of one service (its instances, their
 * checks with output, the recent transitions of those checks; from the page's own view of that service)
 * or one node (member status, checks, services over HTTP, sessions), with the actions the agent allows.
 */
import { instanceActions, nodeMaintenanceAction, nodeMaintenanceId } from './actions.ts';
import { api, errorText } from './api.ts';
import { badge, chips, facts, h, link, section, table, uiPaths } from './dom.ts';
import { checksOf, sessionTtl, worst, type CatalogNode, type Check, type HealthEntry } from './model.ts';
import { nodeChecks, refusedSection } from './node-sources.ts';
import { poller } from './poll.ts';
import { arrived, data, repaint, type Page } from './store.ts';
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

interface CatalogService { ID: string; Service: string; Port?: number }
interface CatalogNodeAnswer { Node: CatalogNode; Services: Record<string, CatalogService> }

/**
 * A node (`/v1/catalog/node/<node>`, read every 3 seconds and whenever its checks change: its address,
 * meta and the services the token may read), its checks (node-sources.ts) and its sessions (the page's
 * own `sessions` view of the node). Each part the agent refuses says so in its section; the rest shows.
 */
export function nodePage(name: string): Page {
  const root = h('div', { 'data-page': 'node', 'data-name': name });
  const checksOf = nodeChecks();
  let catalog: { node: CatalogNodeAnswer | null } | { error: string } | undefined;
  const poll = poller(async () => {
    try {
      catalog = { node: await api<CatalogNodeAnswer | null>(`/v1/catalog/node/${encodeURIComponent(name)}`) };
    } catch (err) {
      catalog = { error: errorText(err) };
    }
    repaint.now();
  }, 3000);
  let checksSeen: string | undefined;
  const update = () => {
    const checks = checksOf.of(name);
    // A service registered or removed shows as a change of the node's checks, most often: read the services again.
    const seen = (checks ?? []).map((c) => c.CheckID).sort().join(',');
    if (seen !== checksSeen) {
      checksSeen = seen;
      poll.kick();
    }
    const answer = catalog !== undefined && 'node' in catalog ? catalog.node : undefined;
    if (answer === null && (checks ?? []).length === 0) {
      root.replaceChildren(h('p', { class: 'panel', 'data-gone': '' }, `The node ${name} is not in the catalog.`), link('/ui/nodes', 'All nodes'));
      return;
    }
    const node = answer?.Node ?? data.nodes.find((n) => n.Node === name);
    const member = data.members.find((m) => m.Name === name);
    const nodeLevel = (checks ?? []).filter((c) => c.ServiceID === '');
    const memberText = member === undefined ? h('span', { class: 'muted' }, 'not a member') : h('span', { class: `member ${memberStatus[member.Status] ?? ''}`, 'data-member': memberStatus[member.Status] ?? String(member.Status) }, memberStatus[member.Status] ?? String(member.Status));
    root.replaceChildren(
      facts([
        ['Health', checks === undefined ? h('span', { class: 'muted' }, '…') : badge(worst(nodeLevel.map((c) => c.Status)))], ['Address', h('span', { class: 'mono' }, node?.Address ?? '')],
        ['Member', memberText], ['Meta', chips(Object.entries(node?.Meta ?? {}).map(([k, v]) => `${k}=${v}`), 'chip meta')],
      ]),
      h('div', { class: 'actions' }, nodeMaintenanceAction(name, (checks ?? []).some((c) => c.CheckID === nodeMaintenanceId))),
      section('Checks', {}, checksOf.note(name) ?? '', checks === undefined ? waiting() : checksTable('node-checks', checks, 'No checks on this node.')),
      section('Services', {}, catalog === undefined ? waiting() : 'error' in catalog
        ? refusedSection('node-services', `this node and its services (GET /v1/catalog/node/${name})`, catalog.error)
        : servicesTable(Object.values(answer?.Services ?? {}), checks ?? [])),
      section('Sessions', {}, nodeSessions(name)));
  };
  return { title: `Node ${name}`, root, needs: [], update, watches: () => ({ node: name }), close: () => { poll.stop(); checksOf.stop(); } };
}

function waiting(): HTMLElement {
  return h('p', { class: 'muted', 'data-section-waiting': '' }, 'Reading…');
}

/** A node's services, each with the worst of its own checks and the node's. */
function servicesTable(services: CatalogService[], checks: Check[]): HTMLElement {
  const nodeLevel = checks.filter((c) => c.ServiceID === '').map((c) => c.Status);
  return table('node-services', ['Health', 'Service', 'Instance', 'Port'], services.sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0)).map((s) =>
    h('tr', { 'data-row': '', 'data-instance': s.ID },
      h('td', {}, badge(worst([...nodeLevel, ...checks.filter((c) => c.ServiceID === s.ID).map((c) => c.Status)]))),
      h('td', {}, link(uiPaths.service(s.Service), s.Service)),
      h('td', { class: 'mono' }, s.ID),
      h('td', {}, s.Port !== undefined && s.Port !== 0 ? String(s.Port) : '—'))), 'No services on this node.');
}

/** The node's sessions from the page's own view of them, or its refusal. */
function nodeSessions(name: string): HTMLElement {
  if (data.nodeSessionsOf === name && data.nodeSessionsError !== undefined) {
    return refusedSection('node-sessions', `the sessions of this node (sessions ${JSON.stringify(name)})`, data.nodeSessionsError);
  }
  if (data.nodeSessionsOf !== name || !arrived.has('nodeSessions')) return waiting();
  return table('node-sessions', ['Session', 'Behavior', 'TTL'], [...data.nodeSessions.values()].map((s) =>
    h('tr', { 'data-row': '', 'data-session': s.ID },
      h('td', {}, link(uiPaths.session(s.ID), s.Name !== '' ? s.Name : s.ID)),
      h('td', {}, s.Behavior),
      h('td', {}, sessionTtl(s) ?? '—'))), 'No sessions on this node.');
}
