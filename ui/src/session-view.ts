/**
 * The session and lock pages. A session: its facts, the locks it holds (with their LockIndex), the
 * checks it is bound to with their current status, and the Invalidate action, each from what the token
 * may read. A lock key: its holder
 * (session, name and node), LockIndex as the fencing token a holder passes to what it guards, and the
 * hand-offs this page saw.
 */
import { invalidateAction } from './actions.ts';
import { hasDotSegment } from './addresses.ts';
import { api, encodePath, errorText } from './api.ts';
import { badge, facts, h, link, section, table, uiPaths } from './dom.ts';
import { kvRefusal } from './kv-view.ts';
import { sessionTtl, type Session } from './model.ts';
import { poller } from './poll.ts';
import { nodeChecks, refusedSection } from './node-sources.ts';
import { arrived, data, refused, repaint, type Page } from './store.ts';
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
    ['TTL', sessionTtl(s) ?? 'none (lives until destroyed or a bound check fails)'],
    ['LockDelay', `${s.LockDelay / 1e9} s`],
  ]);
}

interface Timer {
  RenewedAt: string; RenewBy: string | null; InvalidateBy: string | null; RemainingMs: number | null; WaitingOn: { Key: string; Position: number }[];
  /** The keys it holds that the token may read. */
  Holds: { Key: string; LockIndex: number }[];
}

/** Reads the session's timer every few seconds (renewals are not on the stream) and counts down between reads. */
function sessionTimer(id: string): { countdown: HTMLElement; waits: HTMLElement; holds(): Timer['Holds'] | undefined; kick(): void; stop(): void } {
  const countdown = h('span', { class: 'countdown', id: 'session-countdown' }, '…');
  const waits = h('div', { id: 'session-waits' }, h('p', { class: 'muted' }, '…'));
  let last: { timer: Timer; at: number } | undefined;
  const tick = () => {
    const t = last?.timer;
    if (t === undefined) return;
    countdown.dataset.renewedAt = t.RenewedAt;
    if (t.RemainingMs === null) {
      countdown.textContent = 'no TTL';
      return;
    }
    const left = t.RemainingMs - (performance.now() - last!.at);
    countdown.dataset.leftMs = String(Math.round(left));
    countdown.textContent = left > 0 ? `${(left / 1000).toFixed(1)} s left to renew (renewed ${new Date(t.RenewedAt).toLocaleTimeString()}; invalidated by ${new Date(t.InvalidateBy ?? '').toLocaleTimeString()} at the latest)`
      : `TTL passed ${(-left / 1000).toFixed(1)} s ago: invalidated by ${new Date(t.InvalidateBy ?? '').toLocaleTimeString()} at the latest unless renewed`;
  };
  const poll = poller(async () => {
    try {
      const timer = await api<Timer>(`/v1/session/timer/${encodePath(id)}`);
      const held = JSON.stringify(last?.timer.Holds);
      last = { timer, at: performance.now() };
      if (JSON.stringify(timer.Holds) !== held) repaint.now();
      waits.replaceChildren(timer.WaitingOn.length === 0 ? h('p', { class: 'muted' }, 'Waits on no key at this agent.')
        : h('ol', { class: 'waits' }, ...timer.WaitingOn.map((w) => h('li', { 'data-waits-on': w.Key, 'data-position': String(w.Position) },
          link(uiPaths.lock(w.Key), w.Key, { class: 'mono' }), ` — number ${w.Position} in the queue`))));
      tick();
    } catch (err) {
      countdown.textContent = `unknown (${errorText(err)})`;
    }
  }, 3000);
  let ticker: number | undefined;
  return {
    countdown, waits,
    holds: () => last?.timer.Holds,
    kick: () => {
      poll.kick();
      ticker ??= window.setInterval(tick, 250);
    },
    stop: () => {
      poll.stop();
      window.clearInterval(ticker);
    },
  };
}

/**
 * A session page reads the session over HTTP (`/v1/session/info/<id>`, which shows it only to a token that
 * may read its node's sessions), then watches its node's sessions (whose change is its end) and checks
 * (its bound checks' status; node-sources.ts). The locks it holds come from the view of every held key
 * or, when the stream refuses that, from its timer's `Holds` (the keys the token may read). Each part the
 * agent refuses says so in its section.
 */
export function sessionPage(id: string): Page {
  const root = h('div', { 'data-page': 'session', 'data-id': id });
  const timer = sessionTimer(id);
  const checksOf = nodeChecks();
  /** The session as read over HTTP: null when the agent shows none to this token, a string when the read failed. */
  let info: Session | null | string | undefined;
  api<Session[] | null>(`/v1/session/info/${encodePath(id)}`).then((list) => { info = list?.[0] ?? null; repaint.now(); },
    (err: unknown) => { info = errorText(err); repaint.now(); });
  const update = () => {
    if (info === undefined) return root.replaceChildren(h('p', { class: 'muted', 'data-section-waiting': '' }, 'Reading the session…'));
    if (typeof info === 'string') return root.replaceChildren(refusedSection('session', `this session (GET /v1/session/info/${id})`, info));
    const node = info?.Node;
    const live = data.nodeSessionsOf === node && data.nodeSessionsError === undefined && arrived.has('nodeSessions');
    const s = info === null ? undefined : live ? data.nodeSessions.get(id) : info;
    if (s === undefined) {
      timer.stop();
      root.replaceChildren(h('p', { class: 'panel', 'data-gone': '' }, `There is no session ${id}: it was invalidated, never existed, or this token may not read its node's sessions.`), link('/ui/sessions', 'All sessions'));
      return;
    }
    const checks = checksOf.of(s.Node);
    timer.kick();
    root.replaceChildren(
      sessionFacts(s),
      facts([['TTL countdown', timer.countdown]]),
      h('div', { class: 'actions' }, invalidateAction(s)),
      section('Locks held', {}, ...heldLocks(id, timer.holds())),
      section('Bound checks', {}, checksOf.note(s.Node) ?? '', table('session-checks', ['Status', 'Check', 'Node'], boundChecks(s).map(([node, check]) => {
        const c = checks?.find((k) => k.CheckID === check);
        return h('tr', { 'data-row': '', 'data-check': `${node}/${check}` },
          h('td', {}, checks === undefined ? h('span', { class: 'muted' }, '…') : c === undefined ? h('span', { class: 'muted' }, 'not registered, or not readable') : badge(c.Status)),
          h('td', { class: 'mono' }, check),
          h('td', {}, link(uiPaths.node(node), node)));
      }), 'Bound to no check.')),
      section('Waiting on', {}, h('p', { class: 'muted' }, 'Keys this session waits to acquire in this agent’s queues (`?acquire&wait=`); other agents queue their own.'), timer.waits));
  };
  const watches = () => ({ node: typeof info === 'object' && info !== null ? info.Node : undefined });
  return { title: 'Session', root, needs: [], update, watches, close: () => { timer.stop(); checksOf.stop(); } };
}

/** The locks a session holds: from the view of every held key, or, when that is refused, its timer's `Holds`. */
function heldLocks(id: string, holds: Timer['Holds'] | undefined): HTMLElement[] {
  const locksTable = (locks: { Key: string; LockIndex: number }[]) => table('session-locks', ['Key', 'LockIndex (fencing token)'], locks.map((e) =>
    h('tr', { 'data-row': '', 'data-lock': e.Key },
      h('td', {}, link(uiPaths.lock(e.Key), e.Key, { class: 'mono' })),
      h('td', { class: 'mono' }, String(e.LockIndex)))), 'Holds no lock.');
  const why = refused.get('locks');
  if (why !== undefined) {
    return [refusedSection('session-locks', 'the view of every held key (kv_prefix "" with lockedOnly)', why,
      'Shown instead: the locks of this session on keys this token may read, from GET /v1/session/timer every 3 s.'),
    holds === undefined ? h('p', { class: 'muted', 'data-section-waiting': '' }, 'Reading…') : locksTable(holds)];
  }
  if (!arrived.has('locks')) return [h('p', { class: 'muted', 'data-section-waiting': '' }, 'Waiting for the stream…')];
  return [locksTable([...data.locks.values()].filter((e) => e.Session === id).sort((a, b) => (a.Key < b.Key ? -1 : 1)))];
}

/**
 * A lock's holder read over HTTP (`/v1/session/info/<id>`, once per holder while the page is open): a lock
 * page needs only its key's view, so a token that may read some keys and not every session still sees
 * who holds them. A session's name and node never change. `null`: the agent shows no such session to
 * this token (gone, or on a node whose sessions it may not read); a string: why the read failed.
 */
function holders(onRead: () => void): (id: string) => Session | null | string | undefined {
  const read = new Map<string, Session | null | string>();
  return (id) => {
    const live = data.sessions.get(id);
    if (live !== undefined) return live;
    if (!read.has(id)) {
      read.set(id, '…');
      api<Session[] | null>(`/v1/session/info/${encodePath(id)}`).then((list) => { read.set(id, list?.[0] ?? null); onRead(); },
        (err: unknown) => { read.set(id, errorText(err)); onRead(); });
      return undefined;
    }
    const known = read.get(id);
    return known === '…' ? undefined : known;
  };
}

function holderText(id: string, holder: Session | null | string | undefined): HTMLElement {
  if (holder === undefined) return h('span', { 'data-holder': id }, link(uiPaths.session(id), id), h('span', { class: 'muted' }, ' (reading the session…)'));
  if (holder === null || typeof holder === 'string') {
    const why = holder === null ? 'this token may not read it, or it is gone' : `the session cannot be read: ${holder}`;
    return h('span', { 'data-holder': id, 'data-holder-unknown': '' }, link(uiPaths.session(id), id), h('span', { class: 'muted' }, ` (${why})`));
  }
  return h('span', { 'data-holder': id }, link(uiPaths.session(id), holder.Name || id), h('span', { class: 'muted' }, ' on ', link(uiPaths.node(holder.Node), holder.Node)));
}

interface Queue { Waiters: { Session: string; Name: string; Node: string }[] }

export function lockPage(key: string): Page {
  const root = h('div', { 'data-page': 'lock', 'data-key': key });
  const waiters = h('div', { id: 'lock-waiters' }, h('p', { class: 'muted' }, '…'));
  const poll = poller(async () => {
    // The queue is read by the key in the address: one with `.` or `..` segments would name another key there.
    if (hasDotSegment(key)) {
      waiters.replaceChildren(h('p', { class: 'muted', 'data-no-queue': '' }, 'A browser cannot ask for the queue of a key with `.` or `..` segments (it would resolve them and read another key’s); `curl --path-as-is` on `/v1/lock/queue/<key>` can.'));
      return;
    }
    try {
      const q = await api<Queue>(`/v1/lock/queue/${encodePath(key)}`);
      waiters.replaceChildren(q.Waiters.length === 0 ? h('p', { class: 'muted', 'data-no-waiters': '' }, 'Nobody waits at this agent.')
        : h('ol', { class: 'waits' }, ...q.Waiters.map((w) => h('li', { 'data-waiter': w.Session },
          link(uiPaths.session(w.Session), w.Name !== '' ? w.Name : w.Session), w.Node !== '' ? h('span', { class: 'muted' }, ` on ${w.Node}`) : undefined))));
    } catch (err) {
      waiters.replaceChildren(h('p', { class: 'error' }, `Reading the queue failed: ${errorText(err)}`));
    }
  }, 2000);
  let update = () => undefined as void;
  const holderOf = holders(() => {
    update();
    root.dispatchEvent(new Event('refreshed', { bubbles: true }));
  });
  update = () => {
    poll.kick();
    const e = data.kv.get(key);
    const history = transitions.filter((t) => t.kind === 'lock' && t.subject === key);
    const holderCell = e?.Session === undefined ? h('span', { class: 'muted', 'data-free': '' }, 'free') : holderText(e.Session, holderOf(e.Session));
    root.replaceChildren(
      kvRefusal() ?? '',
      facts([
        ['Key', e === undefined ? h('span', { class: 'mono' }, `${key} (no such key)`) : link(uiPaths.kv(key), key, { class: 'mono' })],
        ['Holder', holderCell],
        ['LockIndex', h('span', { class: 'mono', id: 'lock-index', title: 'Counts acquisitions: a holder passes it as a fencing token' }, String(e?.LockIndex ?? 0))],
        ['ModifyIndex', String(e?.ModifyIndex ?? '—')],
      ]),
      h('p', { class: 'muted' }, 'LockIndex grows with every acquisition: a holder that sends it along with its writes lets the guarded resource refuse a former holder’s late writes (a fencing token).'),
      section('Hand-offs', {}, transitionsTable('lock-history', history, 'No change of holder since this page opened.')),
      section('Queued waiters', {}, h('p', { class: 'muted' }, 'Acquires queued at this agent (`?acquire&wait=`), next first; other agents queue their own.'), waiters));
  };
  // Its key's own view alone: the holder is read over HTTP, the hand-offs come from that view too.
  return { title: 'Lock', root, needs: ['kv'], update: () => update(), close: () => poll.stop() };
}
