/**
 * `roster operator log`: the agent's view of the log (GET /v1/operator/log) — its kind, who leads,
 * the indexes and compaction point, the stream's copies (cluster) and one row per node with its
 * applied index and lag. `--json` prints the answer as it came.
 */
import type { CliContext } from './context.ts';
import { fields, table } from './output.ts';

interface NodeRow {
  name: string;
  address: string;
  server: string;
  appliedIndex: number | null;
  lag: number | null;
  ageMs: number | null;
}

interface Replica { name: string; leader: boolean; current: boolean; activeMs: number; lagMessages: number }

export interface OperatorLog {
  kind: string;
  node: string;
  role: string;
  leader: string;
  appliedIndex: number;
  lastIndex: number;
  commitIndex: number;
  firstIndex: number | null;
  snapshotIndex: number;
  stream: { name: string; leader: string | undefined; replicas: Replica[]; firstSeq: number; lastSeq: number; messages: number; server: string } | null;
  nodes: NodeRow[];
}

const known = (n: number | null): string => (n === null ? 'unknown' : String(n));

/** The text `roster operator log` prints for `log`. */
export function operatorLogText(log: OperatorLog, ctx: Pick<CliContext, 'colors'>): string {
  const c = ctx.colors;
  const summary: [string, string][] = [
    ['Log', log.stream === null ? log.kind : `${log.kind} (stream ${log.stream.name})`],
    ['Leader', log.leader === '' ? c.yellow('none (election)') : log.leader],
    ['This node', `${log.node} (${log.role})`],
    ['Commit index', String(log.commitIndex)],
    ['Compaction point', log.firstIndex === null ? 'unknown' : `index ${log.firstIndex}`],
    ['Snapshot index', String(log.snapshotIndex)],
  ];
  if (log.stream !== null) summary.push(['Stream seq', `${log.stream.firstSeq}..${log.stream.lastSeq} (${log.stream.messages} messages)`]);
  const parts = [fields(summary)];
  if (log.stream !== null) {
    parts.push(table(['Replica', 'Role', 'Current', 'Last seen', 'Lag (msgs)'], log.stream.replicas.map((r) => [
      r.name, r.leader ? c.green('leader') : 'follower', r.current ? 'yes' : c.yellow('no'), `${r.activeMs} ms`, String(r.lagMessages),
    ]), c));
  }
  parts.push(table(['Node', 'Address', 'Server', 'Applied', 'Lag', 'Reported'], log.nodes.map((n) => [
    n.name, n.address, n.server, n.appliedIndex === null ? c.yellow('unknown') : String(n.appliedIndex), known(n.lag),
    n.ageMs === null ? 'never' : `${n.ageMs} ms ago`,
  ]), c));
  return parts.join('\n');
}

export async function operatorLog(ctx: CliContext): Promise<void> {
  const log = await ctx.client.ok<OperatorLog>(ctx.client.get('/v1/operator/log'));
  if (ctx.json) { ctx.outJson(log); return; }
  ctx.out(operatorLogText(log, ctx));
}
