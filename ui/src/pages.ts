/**
 * One page per address (router.ts): the four lists, the KV browser, the detail pages, the timeline,
 * the cluster's log, this agent's own log, and the not-found view.
 */
import { clusterPage } from './cluster-view.ts';
import { nodePage, servicePage } from './detail-views.ts';
import { api, errorText } from './api.ts';
import { h, link, uiPaths } from './dom.ts';
import { folderPage, keyPage } from './kv-view.ts';
import { logPage } from './log-view.ts';
import { checkRows, nodeRows, serviceRows, sessionRows, type Check } from './model.ts';
import { refusedSection } from './node-sources.ts';
import { poller } from './poll.ts';
import type { ListName, Route } from './router.ts';
import { lockPage, sessionPage } from './session-view.ts';
import { arrived, data, refused, repaint, type Page, type StreamField } from './store.ts';
import { transitionsTable } from './tables.ts';
import { keptMs, transitions } from './timeline.ts';
import { checksView, nodesView, servicesView, sessionsView } from './views.ts';

export type Go = (path: string) => void;

const listTitles: Record<ListName, string> = { services: 'Services', nodes: 'Nodes', checks: 'Checks', sessions: 'Sessions' };
const listNeeds: Record<Exclude<ListName, 'nodes'>, StreamField[]> = { services: ['entries'], checks: ['checks'], sessions: ['sessions', 'locks'] };

function listPage(list: Exclude<ListName, 'nodes'>): Page {
  const root = h('div', {});
  const view = () => list === 'services' ? servicesView(serviceRows(data.entries.values()))
    : list === 'checks' ? checksView(checkRows(data.checks.values()))
      : sessionsView(sessionRows(data.sessions.values(), data.locks.values()));
  const page: Page = { title: listTitles[list], root, needs: listNeeds[list], update: () => root.replaceChildren(view()) };
  return list === 'services' ? { ...page, whenRefused: readableServices() } : page;
}

/**
 * The services the token may read, as links to their pages: the all-services view is refused to a token
 * that may not read every service, but each page of one it may read works. Read over HTTP once, when the
 * refusal is first shown (`/v1/catalog/services` lists only what the token may read).
 */
function readableServices(): () => HTMLElement {
  const el = h('div', { class: 'panel', 'data-readable-services': '' }, h('p', { class: 'muted' }, 'Reading the services this token may read…'));
  let asked = false;
  return () => {
    if (asked) return el;
    asked = true;
    api<Record<string, string[]>>('/v1/catalog/services').then((services) => {
      const names = Object.keys(services).sort();
      el.dataset.readableServices = names.join(' ');
      el.replaceChildren(names.length === 0 ? h('p', { class: 'muted' }, 'This token may read no service.')
        : h('p', {}, 'Services this token may read, each on its own page: ', ...names.flatMap((n, i) => [i > 0 ? ', ' : '', link(uiPaths.service(n), n)])));
    }, (err: unknown) => {
      el.replaceChildren(h('p', { class: 'muted' }, `The services this token may read cannot be listed either: ${errorText(err)}`));
    });
    return el;
  };
}

/** How often the Nodes list reads over HTTP what the stream refuses it. */
const nodesEveryMs = 5000;

/**
 * The Nodes list: the nodes and members read over HTTP (main.ts), their services from the view of every
 * service's health and their health from the view of every check. A view the stream refuses to the token
 * says so above the table, and its columns show what the token may read instead, read over HTTP every 5
 * seconds: each node's services (`/v1/catalog/node-services/<node>`), the checks (`/v1/health/state/any`).
 */
function nodesPage(): Page {
  const root = h('div', {});
  let services: Map<string, string[]> | { error: string } | undefined;
  let checks: Check[] | { error: string } | undefined;
  const poll = poller(async () => {
    if (refused.has('entries')) {
      try {
        const lists = await Promise.all(data.nodes.map((n) => api<{ Services: { Service: string }[] | null }>(`/v1/catalog/node-services/${encodeURIComponent(n.Node)}`)
          .then((a): [string, string[]] => [n.Node, [...new Set((a.Services ?? []).map((x) => x.Service))].sort()])));
        services = new Map(lists);
      } catch (err) {
        services = { error: errorText(err) };
      }
    }
    if (refused.has('checks')) {
      try {
        checks = await api<Check[]>('/v1/health/state/any');
      } catch (err) {
        checks = { error: errorText(err) };
      }
    }
    repaint.now();
  }, nodesEveryMs);
  let asked = '';
  const update = () => {
    const waiting = (['entries', 'checks'] as const).some((f) => !arrived.has(f) && !refused.has(f));
    if (waiting) return root.replaceChildren(h('p', { class: 'muted', 'data-waiting': '' }, 'Waiting for the stream…'));
    // Read again at once when the refusals or the node list change, then every few seconds.
    const ask = `${refused.has('entries')}|${refused.has('checks')}|${data.nodes.map((n) => n.Node).join(',')}`;
    if (ask !== asked && (refused.has('entries') || refused.has('checks'))) {
      asked = ask;
      poll.kick();
    }
    const readChecks = !refused.has('checks') ? data.checks.values() : Array.isArray(checks) ? checks : [];
    const rows = nodeRows(data.nodes, data.members, readChecks, refused.has('entries') ? [] : data.entries.values());
    if (refused.has('entries') && services instanceof Map) for (const r of rows) r.services = services.get(r.name) ?? [];
    const failed = (x: unknown) => (x !== undefined && !(x instanceof Map) && !Array.isArray(x) ? ` Reading them failed: ${(x as { error: string }).error}` : '');
    root.replaceChildren(
      refused.has('entries') ? refusedSection('entries', 'the health of every service (service_health "")', refused.get('entries')!,
        `The Services column shows the services this token may read on each node, from GET /v1/catalog/node-services/<node> every ${nodesEveryMs / 1000} s.${failed(services)}`) : '',
      refused.has('checks') ? refusedSection('checks', 'every check (checks_in_state any)', refused.get('checks')!,
        `The Health and Checks columns count the checks this token may read, from GET /v1/health/state/any every ${nodesEveryMs / 1000} s.${failed(checks)}`) : '',
      nodesView(rows));
  };
  return { title: 'Nodes', root, needs: [], update, close: () => poll.stop() };
}

function timelinePage(): Page {
  const root = h('div', { 'data-page': 'timeline' });
  return {
    title: 'Timeline', root, needs: ['checks', 'locks'],
    update: () => {
      const since = Date.now() - keptMs;
      root.replaceChildren(
        h('p', { class: 'muted' }, `Health transitions and lock hand-offs this page saw over the last ${keptMs / 60_000} minutes (since it opened), newest first. Click a heading to sort; the filter box narrows (try “lock” or “critical”).`),
        transitionsTable('timeline', transitions.filter((t) => t.at >= since), 'Nothing changed since this page opened.'));
    },
  };
}

function notFoundPage(path: string): Page {
  const root = h('div', { class: 'panel', 'data-notfound': '' },
    h('p', {}, 'The dashboard has no page at ', h('code', {}, path), '.'),
    h('p', {}, 'Try ', link('/ui/services', 'Services'), ', ', link('/ui/kv/', 'Key/Value'), ' or ', link('/ui/timeline', 'Timeline'), '.'));
  return { title: 'Not found', root, needs: [], update: () => undefined };
}

export function buildPage(route: Route, go: Go): Page {
  switch (route.page) {
    case 'list': return route.list === 'nodes' ? nodesPage() : listPage(route.list);
    case 'folder': return { ...folderPage(route.prefix, go), title: route.prefix === '' ? 'Key/Value' : `Key/Value: ${route.prefix}` };
    case 'key': return { ...keyPage(route.key, go), title: 'Key' };
    case 'lock': return lockPage(route.key);
    case 'service': return servicePage(route.name);
    case 'node': return nodePage(route.name);
    case 'session': return sessionPage(route.id);
    case 'timeline': return timelinePage();
    case 'cluster': return clusterPage();
    case 'log': return logPage();
    default: return notFoundPage(location.pathname);
  }
}

/** What each shared stream view holds, as a refusal names it. */
const viewNames: Record<StreamField, string> = {
  entries: 'the health of every service', checks: 'every check', sessions: 'every session', locks: 'the locks held on every key', kv: 'the keys shown',
  service: 'the health of this service', nodeChecks: 'this node\'s checks', nodeSessions: 'this node\'s sessions',
};

/**
 * A page whose stream views the agent refused to this token: what it may not read, that the page cannot
 * show it, and `extra` (what the token may reach instead), if any.
 */
export function refusedView(fields: StreamField[], extra?: HTMLElement): HTMLElement {
  const needs = fields.every((f) => f === 'service') ? 'read on this service and on every node (its instances name their nodes)'
    : 'read on every service, node, session and key';
  return h('div', { class: 'panel', 'data-stream-refused': fields.join(' ') },
    h('p', { class: 'error' }, `This view cannot be shown: it needs ${fields.map((f) => viewNames[f]).join(' and ')}, and the agent refuses to stream that to this token.`),
    ...fields.map((f) => h('p', { class: 'error mono', 'data-refused': f }, refused.get(f) ?? '')),
    h('p', { class: 'muted' }, `The stream sends a view only to a token that may read all of it. Set a token with ${needs} with the Token button.`),
    ...(extra === undefined ? [] : [extra]));
}

/** The KV prefix a route watches over the stream, if any. */
export function kvPrefixOf(route: Route): string | undefined {
  return route.page === 'folder' ? route.prefix : route.page === 'key' || route.page === 'lock' ? route.key : undefined;
}
