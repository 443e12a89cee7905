/**
 * Tables the detail pages share: checks with their output and actions, and recent transitions
 * (the timeline's rows for one service, node, session or key).
 */
import { checkActions } from './actions.ts';
import { badge, h, link, table, uiPaths } from './dom.ts';
import type { Check } from './model.ts';
import type { Transition } from './timeline.ts';

export function checksTable(view: string, checks: Check[], empty: string): HTMLElement {
  return table(view, ['Status', 'Check', 'Node', 'Output', 'Actions'], checks.map((c) =>
    h('tr', { 'data-row': '', 'data-check': `${c.Node}/${c.CheckID}`, 'data-status': c.Status },
      h('td', {}, badge(c.Status)),
      h('td', {}, h('div', { class: 'name' }, c.Name), h('div', { class: 'muted mono' }, `${c.CheckID}${c.Type !== '' ? ` · ${c.Type}` : ''}`)),
      h('td', {}, link(uiPaths.node(c.Node), c.Node)),
      h('td', {}, c.Output !== '' ? h('pre', { class: 'output' }, c.Output) : h('span', { class: 'muted' }, 'no output')),
      h('td', {}, checkActions(c)))), empty);
}

export function clock(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

function change(t: Transition): HTMLElement {
  if (t.kind === 'health') return h('span', { class: 'change' }, badge(t.from), ' → ', badge(t.to));
  return h('span', { class: 'change' }, `${t.from} → ${t.to}`);
}

function subject(t: Transition): HTMLElement {
  if (t.kind === 'lock') return link(uiPaths.lock(t.subject), t.subject, { class: 'mono' });
  return h('span', {}, link(uiPaths.node(t.node), t.node), ` / ${t.subject.slice(t.node.length + 1)}`,
    t.service !== '' ? h('span', {}, ' (', link(uiPaths.service(t.service), t.service), ')') : undefined);
}

/** Newest first; `data-sort` on the time cell keeps sorting by time exact. */
export function transitionsTable(view: string, rows: readonly Transition[], empty: string): HTMLElement {
  return table(view, ['Time', 'Kind', 'Subject', 'Change', 'Output / detail'], [...rows].reverse().map((t) =>
    h('tr', { 'data-row': '', 'data-kind': t.kind, 'data-subject': t.subject, 'data-to': t.to },
      h('td', { class: 'mono', 'data-sort': String(t.at) }, clock(t.at)),
      h('td', {}, t.kind),
      h('td', {}, subject(t)),
      h('td', {}, change(t)),
      h('td', {}, t.detail !== '' ? h('pre', { class: 'output' }, t.detail) : h('span', { class: 'muted' }, '—')))), empty);
}
