/**
 * The cluster page (/ui/cluster): the log as this agent sees it, from `/v1/operator/log` — its kind,
 * who leads it, the indexes (commit, last, first, snapshot) and every node's applied index and lag.
 * There is no stream topic for it: the page reads it when it opens, every 2 seconds while it stays
 * open, and whenever the stream moves.
 */
import { api, errorText } from './api.ts';
import { facts, h, link, section, table, uiPaths } from './dom.ts';
import { poller } from './poll.ts';
import type { Page } from './store.ts';

interface LogNode { name: string; address: string; server: string; appliedIndex: number | null; lag: number | null; ageMs: number | null }

export interface OperatorLog {
  kind: string; node: string; role: string; leader: string; peers: string[];
  appliedIndex: number; lastIndex: number; commitIndex: number; firstIndex: number | null; snapshotIndex: number;
  stream: { name: string; leader?: string; server: string; replicas: { name: string; leader: boolean }[] } | null;
  nodes: LogNode[];
}

const refreshMs = 2000;

function nodesTable(log: OperatorLog): HTMLElement {
  return table('log-nodes', ['Node', 'Address', 'NATS server', 'Applied index', 'Lag', 'Report age'], log.nodes.map((n) => {
    const leads = n.address !== '' && n.address === log.leader;
    return h('tr', { 'data-row': '', 'data-log-node': n.name, 'data-leader': String(leads) },
      h('td', { class: 'name' }, link(uiPaths.node(n.name), n.name), leads ? h('span', { class: 'badge passing' }, 'leader') : undefined),
      h('td', { class: 'mono' }, n.address),
      h('td', { class: 'mono' }, n.server !== '' ? n.server : '—'),
      h('td', { class: 'mono', 'data-applied': '' }, n.appliedIndex === null ? 'unknown' : String(n.appliedIndex)),
      h('td', { class: 'mono', 'data-lag': n.lag === null ? '' : String(n.lag) }, n.lag === null ? 'unknown' : String(n.lag)),
      h('td', { class: 'mono' }, n.ageMs === null ? '—' : `${(n.ageMs / 1000).toFixed(1)} s`));
  }), 'No node reports.');
}

function render(log: OperatorLog): HTMLElement[] {
  const leader = log.nodes.find((n) => n.address !== '' && n.address === log.leader);
  return [
    facts([
      ['Log', log.kind + (log.stream !== null ? ` (stream ${log.stream.name}, ${log.stream.replicas.length} replicas)` : '')],
      ['Leader', h('span', { id: 'log-leader', 'data-leader-node': leader?.name ?? '' }, log.leader === '' ? 'none (election or not writable)'
        : leader !== undefined ? `${leader.name} · ${log.leader}` : `NATS server ${log.leader} (no node here is connected to it)`)],
      ['This node', h('span', {}, `${log.node} · `, h('span', { id: 'log-role' }, log.role))],
      ['Commit index', h('span', { class: 'mono', id: 'log-commit' }, String(log.commitIndex))],
      ['Last index', String(log.lastIndex)],
      ['First index', log.firstIndex === null ? '—' : String(log.firstIndex)],
      ['Snapshot index', String(log.snapshotIndex)],
      ['Peers', log.peers.join(', ')],
    ]),
    section('Nodes', {}, h('p', { class: 'muted' }, 'Lag: how far each node’s applied index is behind the highest any node reported. A node whose last report is over 5 s old shows as unknown.'), nodesTable(log)),
  ];
}

export function clusterPage(): Page {
  const root = h('div', { 'data-page': 'cluster' }, h('p', { class: 'muted' }, 'Reading /v1/operator/log…'));
  const poll = poller(async () => {
    try {
      root.replaceChildren(...render(await api<OperatorLog>('/v1/operator/log')));
      // Rendered outside the page's update: the page's sort and filter are applied again on this.
      root.dispatchEvent(new Event('refreshed', { bubbles: true }));
    } catch (err) {
      root.replaceChildren(h('p', { class: 'error', 'data-log-error': '' }, `Reading /v1/operator/log failed: ${errorText(err)}`));
    }
  }, refreshMs);
  return { title: 'Cluster', root, needs: [], update: () => poll.kick(), close: () => poll.stop() };
}
