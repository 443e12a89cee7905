/**
 * The four list views as DOM tables, each name a link to its detail page. Each data row is a
 * `tr[data-row]`: the filter box hides and counts those.
 */
import { badge, chips, h, link, table, uiPaths } from './dom.ts';
import { sessionTtl, worst, type Check, type NodeRow, type ServiceRow, type SessionRow } from './model.ts';

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
      h('td', { class: 'name' }, link(uiPaths.service(r.name), r.name)),
      h('td', {}, h('div', { class: 'muted' }, `${r.instances.length} instance${r.instances.length === 1 ? '' : 's'}: ${counts}`), h('span', { class: 'chips' }, ...instances)),
      h('td', {}, chips(r.tags)));
  }), 'No services registered.');
}

export function nodesView(rows: NodeRow[]): HTMLElement {
  return table('nodes', ['Health', 'Node', 'Address', 'Member', 'Services', 'Checks', 'Meta'], rows.map((r) =>
    h('tr', { 'data-row': '', 'data-node': r.name, 'data-status': r.status },
      h('td', {}, badge(r.status)),
      h('td', { class: 'name' }, link(uiPaths.node(r.name), r.name)),
      h('td', { class: 'mono' }, r.address),
      h('td', {}, r.member === undefined ? h('span', { class: 'muted' }, 'not a member') : h('span', { class: `member ${r.member}` }, r.member)),
      h('td', {}, chips(r.services.map((s) => link(uiPaths.service(s), s)))),
      h('td', {}, String(r.checks)),
      h('td', {}, chips(Object.entries(r.meta).map(([k, v]) => `${k}=${v}`), 'chip meta')))),
  'No nodes.');
}

export function checksView(rows: Check[]): HTMLElement {
  return table('checks', ['Status', 'Check', 'Node', 'Service', 'Type', 'Output'], rows.map((c) =>
    h('tr', { 'data-row': '', 'data-check': `${c.Node}/${c.CheckID}`, 'data-status': c.Status },
      h('td', {}, badge(c.Status)),
      h('td', {}, h('div', { class: 'name' }, c.Name), h('div', { class: 'muted mono' }, c.CheckID)),
      h('td', {}, link(uiPaths.node(c.Node), c.Node)),
      h('td', {}, c.ServiceName !== '' ? link(uiPaths.service(c.ServiceName), c.ServiceName) : h('span', { class: 'muted' }, 'node check')),
      h('td', {}, c.Type !== '' ? c.Type : '—'),
      h('td', {}, c.Output !== '' ? h('pre', { class: 'output' }, c.Output) : h('span', { class: 'muted' }, 'no output')))),
  'No checks registered.');
}

export function sessionsView(rows: SessionRow[]): HTMLElement {
  return table('sessions', ['Session', 'Node', 'Behavior', 'TTL', 'Locks held', 'Bound checks'], rows.map(({ session: s, locks }) => {
    const checks = [...(s.NodeChecks ?? []), ...(s.ServiceChecks ?? []).map((c) => c.ID)];
    return h('tr', { 'data-row': '', 'data-session': s.ID },
      h('td', {}, h('div', { class: 'name' }, link(uiPaths.session(s.ID), s.Name !== '' ? s.Name : '(unnamed)')), h('div', { class: 'muted mono' }, s.ID)),
      h('td', {}, link(uiPaths.node(s.Node), s.Node)),
      h('td', {}, s.Behavior),
      h('td', {}, sessionTtl(s) ?? '—'),
      h('td', {}, locks.length > 0
        ? h('span', { class: 'chips' }, ...locks.map((l) => link(uiPaths.lock(l.Key), l.Key, { class: 'chip lock', 'data-lock': l.Key, title: `LockIndex ${l.LockIndex}` })))
        : h('span', { class: 'muted' }, 'none')),
      h('td', {}, chips(checks)));
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
