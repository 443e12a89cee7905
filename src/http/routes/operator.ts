/**
 * The log's truth as this node sees it: who leads (`/v1/status/leader`), which copies there are
 * (`/v1/status/peers`), this node's role and indexes (`Stats.raft` and `Stats.log` of `/v1/agent/self`)
 * and the whole picture (`/v1/operator/log`: indexes, compaction point, the stream's copies, every node's
 * applied index and lag). Every answer comes from what the log already holds or asked in the background
 * (log-view.ts); none waits on the cluster.
 */
import type { ApiContext } from '../api.ts';
import { json, type Reply } from '../reply.ts';
import type { Request } from '../request.ts';
import type { Route } from '../router.ts';
import { logView, type LogView } from './log-view.ts';

function viewOf(api: ApiContext): LogView {
  const runtime = api.runtime;
  return logView({
    status: runtime.logStatus(), appliedIndex: runtime.state.index, nodeName: api.nodeName, selfAddress: api.serverAddress,
    members: runtime.membership.members(), writable: runtime.writable,
  });
}

/** The log's leader: this node's address alone, the leader's in a cluster, "" during an election. */
export function statusLeader(_req: Request, api: ApiContext): Reply {
  return json(viewOf(api).leader);
}

/** The log's copies: this node alone, or each replica of the stream. */
export function statusPeers(_req: Request, api: ApiContext): Reply {
  return json(viewOf(api).peers);
}

/** `Stats.raft` (Consul's names, string values) and `Stats.log` (Roster's) of `/v1/agent/self`. */
export function logStats(api: ApiContext): { raft: Record<string, string>; log: Record<string, string> } {
  const status = api.runtime.logStatus();
  const view = viewOf(api);
  const lastContactMs = api.runtime.leadership().lastContactMs;
  const lastIndex = status?.lastIndex ?? api.runtime.state.index;
  return {
    raft: {
      state: view.role, applied_index: String(api.runtime.state.index), commit_index: String(view.commitIndex),
      last_log_index: String(lastIndex), num_peers: String(Math.max(0, view.peers.length - 1)),
      last_contact: view.role === 'Leader' ? '0' : view.role === 'Candidate' ? 'never' : `${lastContactMs}ms`,
    },
    log: {
      kind: status?.kind ?? 'memory', leader: view.leader, last_index: String(lastIndex),
      first_index: status?.firstIndex === undefined ? '' : String(status.firstIndex), snapshot_index: String(status?.snapshotIndex ?? 0),
      lag: String(Math.max(0, view.commitIndex - api.runtime.state.index)),
      stream: status?.stream?.name ?? '', server: status?.stream?.server ?? '', leader_server: status?.stream?.leader ?? '',
    },
  };
}

/** `/v1/operator/log`: the log, its copies and every node's progress (JSON; docs/reference.md). */
function operatorLog(_req: Request, api: ApiContext): Reply {
  const status = api.runtime.logStatus();
  const view = viewOf(api);
  return json({
    kind: status?.kind ?? 'memory', node: api.nodeName, role: view.role, leader: view.leader, peers: view.peers,
    appliedIndex: api.runtime.state.index, lastIndex: status?.lastIndex ?? api.runtime.state.index, commitIndex: view.commitIndex,
    firstIndex: status?.firstIndex ?? null, snapshotIndex: status?.snapshotIndex ?? 0,
    stream: status?.stream ?? null,
    nodes: view.nodes.map((n) => ({ ...n, appliedIndex: n.appliedIndex ?? null, lag: n.lag ?? null, ageMs: n.ageMs ?? null, window: n.window ?? null })),
  });
}

export const operatorRoutes: Route<ApiContext>[] = [
  { path: '/v1/operator/log', prefix: false, methods: { GET: operatorLog } },
];
