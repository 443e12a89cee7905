/**
 * What the node and session pages read of one node, each part from what the token may read: its checks
 * from the page's own stream view (`node_checks` with the node) or, when the stream refuses that view (it
 * needs read on every service, since a node's checks include its services'), from `GET /v1/health/node/<node>`
 * every 3 seconds, which lists the checks the token may read; and a section's refusal, naming the view and
 * giving the agent's words.
 */
import { api, errorText } from './api.ts';
import { h } from './dom.ts';
import type { Check } from './model.ts';
import { poller } from './poll.ts';
import { arrived, data, repaint } from './store.ts';

/** Read again this often while the live view is refused. */
const everyMs = 3000;

/** A section the agent refuses the token: which view, in the agent's words, and what shows instead. */
export function refusedSection(what: string, view: string, why: string, instead?: string): HTMLElement {
  return h('div', { class: 'refusal', 'data-section-refused': what },
    h('p', { class: 'error' }, `The agent refuses this token ${view}:`),
    h('p', { class: 'error mono', 'data-refused': what }, why),
    ...(instead === undefined ? [] : [h('p', { class: 'muted' }, instead)]));
}

export interface NodeChecks {
  /** The node's checks as far as known: undefined until the live view or the first HTTP read answered. */
  of(node: string): Check[] | undefined;
  /** What the Checks section shows above its table: the live view's refusal and where the checks come from instead. */
  note(node: string): HTMLElement | undefined;
  stop(): void;
}

export function nodeChecks(): NodeChecks {
  let wanted: string | undefined;
  let read: { node: string; checks?: Check[]; error?: string } | undefined;
  const poll = poller(async () => {
    const node = wanted;
    if (node === undefined) return;
    try {
      read = { node, checks: await api<Check[]>(`/v1/health/node/${encodeURIComponent(node)}`) };
    } catch (err) {
      read = { node, error: errorText(err) };
    }
    repaint.now();
  }, everyMs);
  const refused = (node: string) => data.nodeChecksOf === node && data.nodeChecksError !== undefined;
  return {
    of: (node) => {
      if (data.nodeChecksOf !== node) return undefined;
      if (!refused(node)) return arrived.has('nodeChecks') ? [...data.nodeChecks.values()] : undefined;
      if (wanted !== node) {
        wanted = node;
        poll.kick();
      }
      return read?.node === node ? read.checks ?? [] : undefined;
    },
    note: (node) => {
      if (!refused(node)) return undefined;
      const instead = read?.node === node && read.error !== undefined ? `Reading them over HTTP failed too: ${read.error}`
        : `Shown instead: the checks this token may read, from GET /v1/health/node/${node} every ${everyMs / 1000} s (not live).`;
      return refusedSection('node-checks', `the live view of this node's checks (node_checks ${JSON.stringify(node)})`, data.nodeChecksError!, instead);
    },
    stop: () => poll.stop(),
  };
}
