/**
 * The session and lock pages. A session: its facts, the locks it holds (with their LockIndex), the
 * checks it is bound to with their current status, and the Invalidate action. A lock key: its holder
 * (session, name and node), LockIndex as the fencing token a holder passes to what it guards, and the
 * hand-offs this page saw.
 */
import { invalidateAction } from './actions.ts';
import { badge, facts, h, link, section, table, uiPaths } from './dom.ts';
import type { Session } from './model.ts';
import { data, type Page } from './store.ts';
import { transitionsTable } from './tables.ts';
import { transitions } from './timeline.ts';

function boundChecks(s: Session): [string, string][] {
  return [...(s.NodeChecks ?? []).map((id): [string, string] => [s.Node, id]), ...(s.ServiceChecks ?? []).map((c): [string, string] => [s.Node, c.ID])];
}

function sessionFacts(s: Session): HTMLElement {
  return facts([
    ['ID', h('span', { class: 'mono' }, s.ID)],
    ['Name', s.Name !== '' ? s.Name : '(unnamed)'],
    ['Node', link(uiPaths.node(s.Node), s.Node)],
    ['Behavior', s.Behavior],
    ['TTL', s.TTL !== '' ? s.TTL : 'none (lives until destroyed or a bound check fails)'],
    ['LockDelay', `${s.LockDelay / 1e9} s`],
  ]);
}

export function sessionPage(id: string): Page {
  const root = h('div', { 'data-page': 'session', 'data-id': id });
  const update = () => {
    const s = data.sessions.get(id);
    if (s === undefined) {
      root.replaceChildren(h('p', { class: 'panel', 'data-gone': '' }, `There is no session ${id}: it was invalidated, or never existed.`), link('/ui/sessions', 'All sessions'));
      return;
    }
    const locks = [...data.locks.values()].filter((e) => e.Session === id).sort((a, b) => (a.Key < b.Key ? -1 : 1));
    const bound = boundChecks(s);
    root.replaceChildren(
      sessionFacts(s),
      h('div', { class: 'actions' }, invalidateAction(s)),
      section('Locks held', {}, table('session-locks', ['Key', 'LockIndex (fencing token)'], locks.map((e) =>
        h('tr', { 'data-row': '', 'data-lock': e.Key },
          h('td', {}, link(uiPaths.lock(e.Key), e.Key, { class: 'mono' })),
          h('td', { class: 'mono' }, String(e.LockIndex)))), 'Holds no lock.')),
      section('Bound checks', {}, table('session-checks', ['Status', 'Check', 'Node'], bound.map(([node, check]) => {
        const c = data.checks.get(`${node}/${check}`);
        return h('tr', { 'data-row': '', 'data-check': `${node}/${check}` },
          h('td', {}, c === undefined ? h('span', { class: 'muted' }, 'not registered') : badge(c.Status)),
          h('td', { class: 'mono' }, check),
          h('td', {}, link(uiPaths.node(node), node)));
      }), 'Bound to no check.')),
      section('Waiting on', {}, h('p', { class: 'muted' }, 'Queued acquires (`?acquire&wait=`) wait inside the agent that took them; the HTTP API does not list them.')));
  };
  return { title: 'Session', root, needs: ['sessions', 'locks', 'checks'], update };
}

export function lockPage(key: string): Page {
  const root = h('div', { 'data-page': 'lock', 'data-key': key });
  const update = () => {
    const e = data.kv.get(key);
    const holder = e?.Session === undefined ? undefined : data.sessions.get(e.Session);
    const history = transitions.filter((t) => t.kind === 'lock' && t.subject === key);
    const holderCell = e?.Session === undefined ? h('span', { class: 'muted', 'data-free': '' }, 'free')
      : h('span', { 'data-holder': e.Session }, link(uiPaths.session(e.Session), holder?.Name || e.Session),
        holder !== undefined ? h('span', { class: 'muted' }, ' on ', link(uiPaths.node(holder.Node), holder.Node)) : undefined);
    root.replaceChildren(
      facts([
        ['Key', e === undefined ? h('span', { class: 'mono' }, `${key} (no such key)`) : link(uiPaths.kv(key), key, { class: 'mono' })],
        ['Holder', holderCell],
        ['LockIndex', h('span', { class: 'mono', id: 'lock-index', title: 'Counts acquisitions: a holder passes it as a fencing token' }, String(e?.LockIndex ?? 0))],
        ['ModifyIndex', String(e?.ModifyIndex ?? '—')],
      ]),
      h('p', { class: 'muted' }, 'LockIndex grows with every acquisition: a holder that sends it along with its writes lets the guarded resource refuse a former holder’s late writes (a fencing token).'),
      section('Hand-offs', {}, transitionsTable('lock-history', history, 'No change of holder since this page opened.')),
      section('Queued waiters', {}, h('p', { class: 'muted' }, 'Queued acquires wait inside the agent that took them, in arrival order; the HTTP API does not list them.')));
  };
  return { title: 'Lock', root, needs: ['kv', 'sessions'], update };
}
