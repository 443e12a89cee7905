/**
 * The four views as DOM tables. Every text goes in through textContent (never HTML), so names, outputs
 * and keys from the registry cannot inject markup. Each data row is a `tr[data-row]`: the filter box
 * hides and counts those.
 */
import { worst, type Check, type NodeRow, type ServiceRow, type SessionRow } from './model.ts';

type Child = Node | string | undefined;

export function h(tag: string, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, v);
  for (const c of children) if (c !== undefined) el.append(c);
  return el;
}

function badge(status: string): HTMLElement {
  return h('span', { class: `badge ${status}`, 'data-status': status }, status);
}

function table(view: string, headings: string[], rows: HTMLElement[], empty: string): HTMLElement {
  const body = rows.length > 0 ? rows : [h('tr', { class: 'empty' }, h('td', { colspan: String(headings.length) }, empty))];
  return h('table', { 'data-view': view }, h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', {}, t)))), h('tbody', {}, ...body));
}

function list(items: string[], cls = 'chip'): HTMLElement {
  return h('span', { class: 'chips' }, ...items.map((t) => h('span', { class: cls }, t)));
}

export function servicesView(rows: ServiceRow[]): HTMLElement {
  return table('services', ['Health', 'Service', 'Instances', 'Tags'], rows.map((r) => {
    const counts = (['critical', 'warning', 'passing', 'maintenance'] as const)
      .filter((s) => r.byStatus[s] > 0).map((s) => `${r.byStatus[s]} ${s}`).join(', ');
    const instances = r.instances.map((e) => {
      const address = e.Service.Address !== '' ? e.Service.Address : e.Node.Address;
      const at = e.Service.Port !== undefined ? `${address}:${e.Service.Port}` : address;
      const status = worst(e.Checks.map((c) => c.Status));
      return h('span', { class: `chip ${status}`, title: `${e.Checks.length} check(s): ${status}` }, `${e.Node.Node} / ${e.Service.ID}${at !== '' ? ` · ${at}` : ''}`);
    });
    return h('tr', { 'data-row': '', 'data-service': r.name, 'data-status': r.status },
      h('td', {}, badge(r.status)),
      h('td', { class: 'name' }, r.name),
      h('td', {}, h('div', { class: 'muted' }, `${r.instances.length} instance${r.instances.length === 1 ? '' : 's'}: ${counts}`), h('span', { class: 'chips' }, ...instances)),
      h('td', {}, list(r.tags)));
  }), 'No services registered.');
}

export function nodesView(rows: NodeRow[]): HTMLElement {
  return table('nodes', ['Health', 'Node', 'Address', 'Member', 'Services', 'Checks', 'Meta'], rows.map((r) =>
    h('tr', { 'data-row': '', 'data-node': r.name, 'data-status': r.status },
      h('td', {}, badge(r.status)),
      h('td', { class: 'name' }, r.name),
      h('td', { class: 'mono' }, r.address),
      h('td', {}, r.member === undefined ? h('span', { class: 'muted' }, 'not a member') : h('span', { class: `member ${r.member}` }, r.member)),
      h('td', {}, list(r.services)),
      h('td', {}, String(r.checks)),
      h('td', {}, list(Object.entries(r.meta).map(([k, v]) => `${k}=${v}`), 'chip meta')))),
  'No nodes.');
}

export function checksView(rows: Check[]): HTMLElement {
  return table('checks', ['Status', 'Check', 'Node', 'Service', 'Type', 'Output'], rows.map((c) =>
    h('tr', { 'data-row': '', 'data-check': `${c.Node}/${c.CheckID}`, 'data-status': c.Status },
      h('td', {}, badge(c.Status)),
      h('td', {}, h('div', { class: 'name' }, c.Name), h('div', { class: 'muted mono' }, c.CheckID)),
      h('td', {}, c.Node),
      h('td', {}, c.ServiceName !== '' ? c.ServiceName : h('span', { class: 'muted' }, 'node check')),
      h('td', {}, c.Type !== '' ? c.Type : '—'),
      h('td', {}, c.Output !== '' ? h('pre', { class: 'output' }, c.Output) : h('span', { class: 'muted' }, 'no output')))),
  'No checks registered.');
}

export function sessionsView(rows: SessionRow[]): HTMLElement {
  return table('sessions', ['Session', 'Node', 'Behavior', 'TTL', 'Locks held', 'Bound checks'], rows.map(({ session: s, locks }) => {
    const checks = [...(s.NodeChecks ?? []), ...(s.ServiceChecks ?? []).map((c) => c.ID)];
    return h('tr', { 'data-row': '', 'data-session': s.ID },
      h('td', {}, h('div', { class: 'name' }, s.Name !== '' ? s.Name : '(unnamed)'), h('div', { class: 'muted mono' }, s.ID)),
      h('td', {}, s.Node),
      h('td', {}, s.Behavior),
      h('td', {}, s.TTL !== '' ? s.TTL : '—'),
      h('td', {}, locks.length > 0
        ? h('span', { class: 'chips' }, ...locks.map((l) => h('span', { class: 'chip lock', 'data-lock': l.Key, title: `LockIndex ${l.LockIndex}` }, l.Key)))
        : h('span', { class: 'muted' }, 'none')),
      h('td', {}, list(checks)));
  }), 'No sessions.');
}

/**
 * Shows only the rows whose text holds every word of the filter (any case); returns [shown, total].
 */
export function applyFilter(container: HTMLElement, filter: string): [number, number] {
  const words = filter.toLowerCase().split(/\s+/).filter((w) => w !== '');
  const rows = [...container.querySelectorAll<HTMLElement>('tr[data-row]')];
  let shown = 0;
  for (const row of rows) {
    const text = (row.textContent ?? '').toLowerCase();
    const keep = words.every((w) => text.includes(w));
    row.hidden = !keep;
    if (keep) shown += 1;
  }
  return [shown, rows.length];
}
