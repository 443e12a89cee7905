/**
 * The dashboard at /ui/: services, nodes, checks and sessions of this agent, kept live over the
 * WebSocket stream (/v1/stream). Four subscriptions feed it: every service's health entries
 * (`service_health` with the `""` subject), every check (`checks_in_state` `any`), every session
 * (`sessions` `""`) and the held locks (`kv_prefix` `""` with the `lockedOnly` filter). The
 * node list and gossip members have no topic: they are read over HTTP when the page connects and
 * again whenever the stream shows a node appear, leave, or change its node checks.
 */
import './style.css';
import { checkRows, nodeRows, serviceRows, sessionRows, type CatalogNode, type Check, type HealthEntry, type KvEntry, type Member, type Session } from './model.ts';
import { StreamClient, type LinkState } from './stream.ts';
import { applyFilter, checksView, h, nodesView, servicesView, sessionsView } from './views.ts';

type ViewName = 'services' | 'nodes' | 'checks' | 'sessions';
const viewNames: ViewName[] = ['services', 'nodes', 'checks', 'sessions'];
const titles: Record<ViewName, string> = { services: 'Services', nodes: 'Nodes', checks: 'Checks', sessions: 'Sessions' };
const tokenKey = 'roster.token';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** The stream's views (kept by the stream client, read here) and the two HTTP lists. */
const data = {
  entries: new Map() as ReadonlyMap<string, HealthEntry>,
  checks: new Map() as ReadonlyMap<string, Check>,
  sessions: new Map() as ReadonlyMap<string, Session>,
  kv: new Map() as ReadonlyMap<string, KvEntry>,
  nodes: [] as CatalogNode[],
  members: [] as Member[],
};

type StreamField = 'entries' | 'checks' | 'sessions' | 'kv';
/** The stream views each page needs before it can say "none" rather than "not yet". */
const needs: Record<ViewName, StreamField[]> = { services: ['entries'], nodes: ['entries', 'checks'], checks: ['checks'], sessions: ['sessions', 'kv'] };
const arrived = new Set<StreamField>();

const token = () => localStorage.getItem(tokenKey) ?? '';

// ---------------------------------------------------------------- HTTP (nodes and members)

async function api<T>(path: string): Promise<T> {
  const t = token();
  const res = await fetch(path, { headers: t === '' ? {} : { Authorization: `Bearer ${t}` } });
  if (!res.ok) {
    const body = await res.text();
    let message = body;
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? body;
    } catch { /* a plain-text error (consul dialect) */ }
    throw new ApiError(res.status, message);
  }
  return (await res.json()) as T;
}

class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

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
    notice('');
  } catch (err) {
    notice(err instanceof ApiError && (err.status === 401 || err.status === 403)
      ? `The API refused the node list (${err.status}: ${err.message}). Set a token with the Token button.`
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

// ---------------------------------------------------------------- rendering

function currentView(): ViewName {
  const name = location.pathname.replace(/^\/ui\/?/, '').split('/')[0] ?? '';
  return (viewNames as string[]).includes(name) ? (name as ViewName) : 'services';
}

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
  const view = currentView();
  $('title').textContent = titles[view];
  document.title = `${titles[view]} · Roster`;
  for (const a of document.querySelectorAll<HTMLElement>('[data-nav]')) a.classList.toggle('active', a.dataset.nav === view);
  if (!needs[view].every((f) => arrived.has(f))) {
    $('view').replaceChildren(h('p', { class: 'muted', 'data-waiting': '' }, 'Waiting for the stream…'));
    $('count').textContent = '';
    return;
  }
  const content = view === 'services' ? servicesView(serviceRows(data.entries.values()))
    : view === 'nodes' ? nodesView(nodeRows(data.nodes, data.members, data.checks.values(), data.entries.values()))
      : view === 'checks' ? checksView(checkRows(data.checks.values()))
        : sessionsView(sessionRows(data.sessions.values(), data.kv.values()));
  $('view').replaceChildren(content);
  filter();
}

function filter(): void {
  const text = $<HTMLInputElement>('filter').value;
  const [shown, total] = applyFilter($('view'), text);
  $('count').textContent = text.trim() === '' ? `${total}` : `${shown} of ${total}`;
}

function notice(text: string): void {
  const el = $('notice');
  el.textContent = text;
  el.hidden = text === '';
}

function showLink(s: LinkState): void {
  const el = $('connection');
  el.dataset.state = s.kind;
  el.textContent = s.kind === 'live' ? `live · index ${s.index}`
    : s.kind === 'connecting' ? 'connecting…'
      : `${s.why}; retrying in ${(s.inMs / 1000).toFixed(1)} s`;
}

// ---------------------------------------------------------------- navigation, filter, token

function navigate(path: string): void {
  const q = $<HTMLInputElement>('filter').value;
  history.pushState(null, '', q === '' ? path : `${path}?filter=${encodeURIComponent(q)}`);
  render();
}

function wire(stream: StreamClient): void {
  document.addEventListener('click', (ev) => {
    const a = (ev.target as HTMLElement).closest<HTMLAnchorElement>('a[data-link]');
    if (a === null || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    navigate(a.pathname);
  });
  window.addEventListener('popstate', () => {
    $<HTMLInputElement>('filter').value = new URLSearchParams(location.search).get('filter') ?? '';
    render();
  });
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
  const form = $<HTMLFormElement>('token-form');
  const input = $<HTMLInputElement>('token-input');
  $('token-button').addEventListener('click', () => {
    form.hidden = !form.hidden;
    input.value = token();
    if (!form.hidden) input.focus();
  });
  const useToken = (value: string) => {
    if (value === '') localStorage.removeItem(tokenKey);
    else localStorage.setItem(tokenKey, value);
    form.hidden = true;
    nodesSeenFor = '';
    stream.restart();
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    useToken(input.value.trim());
  });
  $('token-clear').addEventListener('click', () => useToken(''));
}

// ---------------------------------------------------------------- start

function main(): void {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const stream = new StreamClient(`${scheme}//${location.host}/v1/stream`, token, (s) => {
    showLink(s);
    if (s.kind === 'retrying' && token() === '') probeAuth();
  }, (text) => notice(`Stream: ${text}`));
  const into = (field: StreamField) => (items: ReadonlyMap<string, unknown>) => {
    (data as Record<StreamField, ReadonlyMap<string, unknown>>)[field] = items;
    arrived.add(field);
    refreshNodesIfChanged();
    schedule();
  };
  stream.add({ topic: 'service_health', key: '', onView: into('entries') });
  stream.add({ topic: 'checks_in_state', key: 'any', onView: into('checks') });
  stream.add({ topic: 'sessions', key: '', onView: into('sessions') });
  // Only the KV entries a session holds (the locks): the sessions view shows them beside their holders.
  stream.add({ topic: 'kv_prefix', key: '', filter: { lockedOnly: true }, onView: into('kv') });
  wire(stream);
  render();
  stream.start();
}

/** A refused upgrade looks like any lost connection in a browser: ask the API why, once per failure run. */
let probing = false;
function probeAuth(): void {
  if (probing) return;
  probing = true;
  api('/v1/agent/self').then(
    () => notice(''),
    (err: unknown) => {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) notice(`The agent wants a token (${err.status}: ${err.message}). Set one with the Token button.`);
    },
  ).finally(() => { probing = false; });
}

main();
