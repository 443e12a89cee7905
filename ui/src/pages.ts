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
import { checkRows, nodeRows, serviceRows, sessionRows } from './model.ts';
import type { ListName, Route } from './router.ts';
import { lockPage, sessionPage } from './session-view.ts';
import { data, refused, type Page, type StreamField } from './store.ts';
import { transitionsTable } from './tables.ts';
import { keptMs, transitions } from './timeline.ts';
import { checksView, nodesView, servicesView, sessionsView } from './views.ts';

export type Go = (path: string) => void;

const listTitles: Record<ListName, string> = { services: 'Services', nodes: 'Nodes', checks: 'Checks', sessions: 'Sessions' };
const listNeeds: Record<ListName, StreamField[]> = { services: ['entries'], nodes: ['entries', 'checks'], checks: ['checks'], sessions: ['sessions', 'locks'] };

function listPage(list: ListName): Page {
  const root = h('div', {});
  const view = () => list === 'services' ? servicesView(serviceRows(data.entries.values()))
    : list === 'nodes' ? nodesView(nodeRows(data.nodes, data.members, data.checks.values(), data.entries.values()))
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
    case 'list': return listPage(route.list);
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
  service: 'the health of this service',
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
