/**
 * DOM building blocks of every view. Every text goes in through textContent (never HTML), so names,
 * outputs, keys and values from the registry cannot inject markup.
 */
import { keyToAddress, segmentToAddress } from './addresses.ts';

export type Child = Node | string | undefined;

export function h(tag: string, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, v);
  for (const c of children) if (c !== undefined) el.append(c);
  return el;
}

export function badge(status: string): HTMLElement {
  return h('span', { class: `badge ${status}`, 'data-status': status }, status);
}

/** A link the page follows itself (no reload): `href` is a path under /ui/. */
export function link(href: string, text: Child, attrs: Record<string, string | undefined> = {}): HTMLElement {
  return h('a', { href, 'data-link': '', ...attrs }, text);
}

/** A table of `data-row` rows; `empty` stands in for none. */
export function table(view: string, headings: string[], rows: HTMLElement[], empty: string): HTMLElement {
  const body = rows.length > 0 ? rows : [h('tr', { class: 'empty' }, h('td', { colspan: String(headings.length) }, empty))];
  return h('div', { class: 'scroll' },
    h('table', { 'data-view': view }, h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', {}, t)))), h('tbody', {}, ...body)));
}

export function chips(items: Child[], cls = 'chip'): HTMLElement {
  return h('span', { class: 'chips' }, ...items.map((t) => h('span', { class: cls }, t)));
}

export function button(text: string, attrs: Record<string, string | undefined>, onClick: () => void): HTMLElement {
  const b = h('button', { type: 'button', ...attrs }, text);
  b.addEventListener('click', onClick);
  return b;
}

/** A section of a detail page: a heading and its content. */
export function section(title: string, attrs: Record<string, string | undefined>, ...children: Child[]): HTMLElement {
  return h('section', { class: 'panel', ...attrs }, h('h2', {}, title), ...children);
}

/** A definition list of label/value pairs. */
export function facts(pairs: [string, Child][]): HTMLElement {
  return h('dl', { class: 'facts' }, ...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** The dashboard's addresses of a name or key, written so that no browser turns them into another (addresses.ts). */
export const uiPaths = {
  service: (name: string) => `/ui/services/${segmentToAddress(name)}`,
  node: (name: string) => `/ui/nodes/${segmentToAddress(name)}`,
  session: (id: string) => `/ui/sessions/${segmentToAddress(id)}`,
  kv: (key: string) => `/ui/kv/${keyToAddress(key)}`,
  lock: (key: string) => `/ui/locks/${keyToAddress(key)}`,
};
