/**
 * `roster operator log`: the agent's view of the log (GET /v1/operator/log) — its kind, who leads,
 * the indexes and compaction point, the stream's copies (cluster) and one row per node with its
 * applied index, lag and (cluster) the newest window of the stream it digested, marked where two nodes
 * read that window differently. `--json` prints the answer as it came.
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
  /** The newest window of the stream the node digested (cluster); null when unknown. */
  window?: { end: number; sha: string } | null;
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
  const rows = log.nodes.map((n) => [
    n.name, n.address, n.server, n.appliedIndex === null ? c.yellow('unknown') : String(n.appliedIndex), known(n.lag),
    n.ageMs === null ? 'never' : `${n.ageMs} ms ago`,
  ]);
  if (log.stream === null) {
    parts.push(table(['Node', 'Address', 'Server', 'Applied', 'Lag', 'Reported'], rows, c));
  } else {
    const cell = windowCells(log.nodes, c);
    parts.push(table(['Node', 'Address', 'Server', 'Applied', 'Lag', 'Reported', 'Stream window'], rows.map((r, k) => [...r, cell[k]!]), c));
  }
  return parts.join('\n');
}

/**
 * Each node's newest window of the stream as `<end> <digest>`; one that another node reports with a
 * different digest for the same window is marked: the two read different copies of the stream.
 */
function windowCells(nodes: readonly NodeRow[], c: CliContext['colors']): string[] {
  const shas = new Map<number, Set<string>>();
  for (const n of nodes) if (n.window) shas.set(n.window.end, (shas.get(n.window.end) ?? new Set()).add(n.window.sha));
  return nodes.map((n) => {
    if (!n.window) return 'unknown';
    const text = `${n.window.end} ${n.window.sha.slice(0, 8)}`;
    return shas.get(n.window.end)!.size > 1 ? c.red(`${text} differs`) : text;
  });
}

export async function operatorLog(ctx: CliContext): Promise<void> {
  const log = await ctx.client.ok<OperatorLog>(ctx.client.get('/v1/operator/log'));
  if (ctx.json) { ctx.outJson(log); return; }
  ctx.out(operatorLogText(log, ctx));
}
