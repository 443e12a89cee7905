/**
 * The dashboard at /ui/: services, nodes, checks, sessions, the KV store and the cluster's log of this
 * agent, kept live over the WebSocket stream (/v1/stream). Its subscriptions: every service's health
 * entries (`service_health` with the `""` subject), every check (`checks_in_state` `any`), every session
 * (`sessions` `""`), the held locks (`kv_prefix` `""` with the `lockedOnly` filter) and, on a KV page,
 * the entries under the folder or key shown (`kv_prefix` with that prefix), on a service's page that
 * service's health entries (`service_health` with its name), on a node's or a session's page that node's
 * checks (`node_checks`) and sessions (`sessions` with the node). The node list and gossip
 * members have no topic: they are read over HTTP when the page connects and again whenever the stream
 * shows a node appear, leave, or change its node checks.
 */
import './style.css';
import { api, ApiError, setToken, token } from './api.ts';
import { wireConfirm } from './confirm.ts';
import { h } from './dom.ts';
import { checksOf, type CatalogNode, type Member } from './model.ts';
import { buildPage, kvPrefixOf, refusedView } from './pages.ts';
import { navOf, parseRoute } from './router.ts';
import { applySort, nextSort, type SortState } from './sort.ts';
import { StreamClient, type LinkState, type Subscription } from './stream.ts';
import { arrived, data, refused, repaint, type Page, type StreamField } from './store.ts';
import { record, recordLock, recordService } from './timeline.ts';
import { applyFilter } from './views.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

// ---------------------------------------------------------------- HTTP (nodes and members)

let nodesInFlight = false;
let nodesAgain = false;
/** The node names and node-check statuses the node list was last read for. */
let nodesSeenFor = '';

/** Reads nodes and members again when the stream shows a different set of nodes or node-check states. */
function refreshNodesIfChanged(): void {
  const names = new Set<string>();
  for (const e of data.entries.values()) names.add(e.Node.Node);
  const nodeChecks: string[] = [];
  for (const c of data.checks.values()) {
    names.add(c.Node);
    if (c.ServiceID === '') nodeChecks.push(`${c.Node}/${c.CheckID}=${c.Status}`);
  }
  const seen = `${[...names].sort().join(',')}|${nodeChecks.sort().join(',')}`;
  if (seen === nodesSeenFor) return;
  nodesSeenFor = seen;
  void refreshNodes();
}

async function refreshNodes(): Promise<void> {
  if (nodesInFlight) {
    nodesAgain = true;
    return;
  }
  nodesInFlight = true;
  try {
    [data.nodes, data.members] = await Promise.all([api<CatalogNode[]>('/v1/catalog/nodes'), api<Member[]>('/v1/agent/members')]);
    // The agent endpoints of the actions act on this agent's node: its name decides where they show.
    data.self ??= (await api<{ Config: { NodeName: string } }>('/v1/agent/self')).Config.NodeName;
    notice('');
  } catch (err) {
    notice(err instanceof ApiError && (err.status === 401 || err.status === 403)
      ? `The API refused the node list (${err.message}). Set a token with the Token button.`
      : `Reading the node list failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    nodesInFlight = false;
  }
  schedule();
  if (nodesAgain) {
    nodesAgain = false;
    void refreshNodes();
  }
}

// ---------------------------------------------------------------- the page's own subscription

/** Views a page watches for itself beside the shared ones: a KV folder or key, one service's health, one node's checks and sessions. */
type PageField = 'kv' | 'service' | 'nodeChecks' | 'nodeSessions';

interface PageView {
  topic: string;
  /** Puts the view in place: the items of `key`, or none (a new key, or no page that needs one). */
  show(key: string | undefined, items: ReadonlyMap<string, unknown>): void;
  /** The stream's refusal of it; undefined clears it. */
  refuse(text: string | undefined): void;
  /** Each complete view of `key` as it arrives. */
  arrived?(key: string, items: ReadonlyMap<string, unknown>): void;
}

const pageViews: Record<PageField, PageView> = {
  kv: {
    topic: 'kv_prefix',
    show: (key, items) => { data.kvPrefix = key; data.kv = items as typeof data.kv; },
    // The KV pages show their refusal inside the page, beside the tools that still work: it counts as arrived.
    refuse: (text) => { data.kvError = text; if (text !== undefined) arrived.add('kv'); },
    // A lock page's hand-offs when the held-locks view is refused.
    arrived: (key, items) => recordLock(key, items, refused.has('locks')),
  },
  service: {
    topic: 'service_health',
    show: (key, items) => { data.serviceName = key; data.service = items as typeof data.service; },
    refuse: (text) => { if (text === undefined) refused.delete('service'); else refused.set('service', text); },
    // Its checks' changes are the page's recent transitions when the all-checks view is refused.
    arrived: (key, items) => recordService(key, checksOf((items as typeof data.service).values()), refused.has('checks')),
  },
  // A node's own views: the page shows a refusal inside the section it would fill, so it counts as arrived.
  nodeChecks: {
    topic: 'node_checks',
    show: (key, items) => { data.nodeChecksOf = key; data.nodeChecks = items as typeof data.nodeChecks; },
    refuse: (text) => { data.nodeChecksError = text; if (text !== undefined) arrived.add('nodeChecks'); },
  },
  nodeSessions: {
    topic: 'sessions',
    show: (key, items) => { data.nodeSessionsOf = key; data.nodeSessions = items as typeof data.nodeSessions; },
    refuse: (text) => { data.nodeSessionsError = text; if (text !== undefined) arrived.add('nodeSessions'); },
  },
};

let stream: StreamClient;
const watching: Record<PageField, { key?: string; id?: string }> = { kv: {}, service: {}, nodeChecks: {}, nodeSessions: {} };
let pageSubs = 0;

/** Watches `key` (or nothing) over the stream for the page shown: one subscription of each kind at a time. */
function watchForPage(field: PageField, key: string | undefined): void {
  const w = watching[field];
  const view = pageViews[field];
  if (key === w.key) return;
  if (w.id !== undefined) stream.remove(w.id);
  w.key = key;
  w.id = undefined;
  view.show(key, new Map());
  view.refuse(undefined);
  arrived.delete(field);
  if (key === undefined) return;
  pageSubs += 1;
  const id = `${field}#${pageSubs}`;
  w.id = id;
  stream.add({ id, topic: view.topic, key, onView: (items) => {
    if (id !== w.id) return;
    view.show(key, items);
    view.refuse(undefined);
    view.arrived?.(key, items);
    arrived.add(field);
    schedule();
  }, onError: (text) => {
    if (id !== w.id) return;
    view.refuse(text);
    schedule();
  } });
}

// ---------------------------------------------------------------- rendering

let mounted: { path: string; page: Page } | undefined;
/** Each address's sorted column, while the page is open. */
const sorts = new Map<string, SortState>();
let scheduled = false;

/** One render per turn of the event loop, however many events arrived in it. */
function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setTimeout(() => {
    scheduled = false;
    render();
  }, 0);
}

function render(): void {
  const route = parseRoute(location.pathname);
  if (mounted?.path !== location.pathname) {
    mounted?.page.close?.();
    mounted = { path: location.pathname, page: buildPage(route, navigate) };
    watchForPage('kv', kvPrefixOf(route));
    watchForPage('service', route.page === 'service' ? route.name : undefined);
  }
  const page = mounted.page;
  // A session page learns its node over HTTP: its views follow once it does.
  const node = page.watches?.().node;
  watchForPage('nodeChecks', node);
  watchForPage('nodeSessions', node);
  const title = page.title ?? '';
  $('title').textContent = title;
  document.title = `${title} · Roster`;
  const nav = navOf(route);
  for (const a of document.querySelectorAll<HTMLElement>('[data-nav]')) a.classList.toggle('active', a.dataset.nav === nav);
  const view = $('view');
  const refusals = page.needs.filter((f) => refused.has(f));
  if (refusals.length > 0) {
    view.replaceChildren(refusedView(refusals, page.whenRefused?.()));
    $('count').textContent = '';
    return;
  }
  if (!page.needs.every((f) => arrived.has(f))) {
    view.replaceChildren(h('p', { class: 'muted', 'data-waiting': '' }, 'Waiting for the stream…'));
    $('count').textContent = '';
    return;
  }
  if (view.firstChild !== page.root) view.replaceChildren(page.root);
  page.update();
  applySort(view, sorts.get(location.pathname));
  filter();
}

function filter(): void {
  const text = $<HTMLInputElement>('filter').value;
  const [shown, total] = applyFilter($('view'), text);
  $('count').textContent = total === 0 ? '' : text.trim() === '' ? `${total}` : `${shown} of ${total}`;
}

function notice(text: string): void {
  const el = $('notice');
  el.textContent = text;
  el.hidden = text === '';
}

function linkText(s: LinkState): string {
  switch (s.kind) {
    case 'connecting': return 'connecting…';
    case 'open': return 'connected · subscribing…';
    case 'live': return `live · index ${s.index}${s.refused > 0 ? ` · ${s.refused} of ${s.views} views refused` : ''}`;
    case 'refused': return `connected · every view refused (${s.views})`;
    case 'denied': return `token refused by the stream: ${s.why}`;
    default: return `${s.why}; retrying in ${(s.inMs / 1000).toFixed(1)} s`;
  }
}

function showLink(s: LinkState): void {
  const el = $('connection');
  el.dataset.state = s.kind;
  el.textContent = linkText(s);
  el.title = s.kind === 'refused' ? 'The agent accepted the connection but refuses this token every view the page asked for: set a token that may read them with the Token button.'
    : s.kind === 'denied' ? 'The agent refuses this token the stream (GET /v1/stream says why). Nothing is retried until another token is set with the Token button.'
    : s.kind === 'live' && s.refused > 0 ? 'The agent refuses this token some views: the pages that need them say which.' : 'WebSocket stream /v1/stream';
}

// ---------------------------------------------------------------- navigation, filter, token

function navigate(path: string): void {
  const q = $<HTMLInputElement>('filter').value;
  history.pushState(null, '', q === '' ? path : `${path}?filter=${encodeURIComponent(q)}`);
  render();
}

function wireFilter(): void {
  const box = $<HTMLInputElement>('filter');
  box.value = new URLSearchParams(location.search).get('filter') ?? '';
  box.addEventListener('input', () => {
    // The filter stays in the address (as Consul's `?filter=`) so a reload or a shared link keeps it.
    const url = new URL(location.href);
    if (box.value === '') url.searchParams.delete('filter');
    else url.searchParams.set('filter', box.value);
    history.replaceState(null, '', url);
    filter();
  });
}

function wireToken(): void {
  const form = $<HTMLFormElement>('token-form');
  const input = $<HTMLInputElement>('token-input');
  $('token-button').addEventListener('click', () => {
    form.hidden = !form.hidden;
    input.value = token();
    if (!form.hidden) input.focus();
  });
  const useToken = (value: string) => {
    setToken(value);
    form.hidden = true;
    notice('');
    nodesSeenFor = '';
    stream.restart();
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    useToken(input.value.trim());
  });
  $('token-clear').addEventListener('click', () => useToken(''));
}

function wire(): void {
  document.addEventListener('click', (ev) => {
    const a = (ev.target as HTMLElement).closest<HTMLAnchorElement>('a[data-link]');
    if (a === null || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    navigate(a.pathname);
  });
  $('view').addEventListener('click', (ev) => {
    const th = (ev.target as HTMLElement).closest('th');
    if (th === null) return;
    sorts.set(location.pathname, nextSort(sorts.get(location.pathname), [...th.parentElement!.children].indexOf(th)));
    render();
  });
  $('view').addEventListener('refreshed', () => {
    applySort($('view'), sorts.get(location.pathname));
    filter();
  });
  window.addEventListener('popstate', () => {
    $<HTMLInputElement>('filter').value = new URLSearchParams(location.search).get('filter') ?? '';
    render();
  });
  wireFilter();
  wireToken();
  wireConfirm();
}

// ---------------------------------------------------------------- start

function main(): void {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  stream = new StreamClient(`${scheme}//${location.host}/v1/stream`, token, (s) => {
    showLink(s);
    if (s.kind === 'denied') notice(`The agent refuses this token the stream (${s.why}). Set a token with the Token button.`);
  }, (text) => notice(`Stream: ${text}`), streamVerdict);
  const into = (field: StreamField, sub: Pick<Subscription, 'topic' | 'key' | 'filter'>) => stream.add({ ...sub,
    onView: (items) => {
      record(field, items);
      (data as Record<StreamField, ReadonlyMap<string, unknown>>)[field] = items;
      arrived.add(field);
      refused.delete(field);
      refreshNodesIfChanged();
      schedule();
    },
    // Kept by view rather than in the notice line, which a later successful read clears.
    onError: (text) => {
      refused.set(field, text);
      // The node list is read over HTTP, whatever the stream refuses.
      refreshNodesIfChanged();
      schedule();
    },
  });
  into('entries', { topic: 'service_health', key: '' });
  into('checks', { topic: 'checks_in_state', key: 'any' });
  into('sessions', { topic: 'sessions', key: '' });
  // Only the KV entries a session holds (the locks): the sessions view shows them beside their holders.
  into('locks', { topic: 'kv_prefix', key: '', filter: { lockedOnly: true } });
  repaint.now = schedule;
  wire();
  render();
  stream.start();
}

/**
 * A refused upgrade looks like any lost connection in a browser: a plain GET of the stream's path answers
 * the upgrade's verdict for the same token (401 or 403 when it refuses the token, 426 when it would let it
 * in). The refusal in the agent's words, or undefined (426, or no answer) to keep retrying.
 */
async function streamVerdict(): Promise<string | undefined> {
  try {
    await api('/v1/stream');
    return undefined;
  } catch (err) {
    return err instanceof ApiError && (err.status === 401 || err.status === 403) ? err.message : undefined;
  }
}

main();
