/**
 * The log page (/ui/log): this agent's log as it is written, from `/v1/agent/monitor` at the level chosen
 * (info at first), oldest at the top, the last `linesKept` lines kept, one row a line so that the page's
 * filter box narrows them. It stays scrolled to the newest line unless the reader scrolled up. Choosing
 * another level follows the log again at it; leaving the page ends the request. With authentication on it
 * needs agent read.
 */
import { errorText, follow } from './api.ts';
import { h } from './dom.ts';
import type { Page } from './store.ts';

const levels = ['trace', 'debug', 'info', 'warn', 'error'];
/** Lines the page keeps; older ones scroll away. */
const linesKept = 1000;

export function logPage(): Page {
  const lines: string[] = [];
  let partial = '';
  let drawing = false;
  let following: AbortController | undefined;
  const box = h('div', { class: 'log-lines', id: 'log-lines' });
  const status = h('p', { class: 'muted', id: 'log-status' });
  const select = h('select', { id: 'log-level', 'aria-label': 'Level' },
    ...levels.map((l) => h('option', { value: l, ...(l === 'info' ? { selected: '' } : {}) }, l))) as HTMLSelectElement;
  // Drawn once a frame however many pieces arrived in it; the page's sort and filter are applied again after.
  const draw = () => {
    drawing = false;
    const atNewest = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    box.replaceChildren(h('table', { 'data-view': 'log' }, h('tbody', {}, ...lines.map((l) => h('tr', { 'data-row': '' }, h('td', {}, l))))));
    if (atNewest) box.scrollTop = box.scrollHeight;
    box.dispatchEvent(new Event('refreshed', { bubbles: true }));
  };
  const add = (text: string) => {
    const parts = (partial + text).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    if (lines.length > linesKept) lines.splice(0, lines.length - linesKept);
    if (!drawing) {
      drawing = true;
      requestAnimationFrame(draw);
    }
  };
  const say = (text: string, error: boolean) => {
    status.textContent = text;
    status.className = error ? 'error' : 'muted';
    status.toggleAttribute('data-log-error', error);
  };
  const start = () => {
    following?.abort();
    const mine = new AbortController();
    following = mine;
    lines.length = 0;
    partial = '';
    draw();
    say(`Following this agent's log at ${select.value} and above.`, false);
    follow(`/v1/agent/monitor?loglevel=${select.value}`, mine.signal, add).then(
      () => { if (!mine.signal.aborted) say('The agent ended the log: it stopped, or the token expired. Reload the page to follow it again.', true); },
      (err: unknown) => { if (!mine.signal.aborted) say(`Reading /v1/agent/monitor failed: ${errorText(err)}`, true); });
  };
  select.addEventListener('change', start);
  const root = h('div', { 'data-page': 'log' }, h('p', { class: 'toolbar' }, h('label', {}, 'Level ', select)), status, box);
  start();
  return { title: 'Log', root, needs: [], update: () => undefined, close: () => following?.abort() };
}
