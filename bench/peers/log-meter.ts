/**
 * What the logs did over a bench window, read at its two ends from outside: each Roster node's group
 * commits and their entries (the count and sum of its `roster_log_commit_entries` histogram, in
 * `/v1/agent/metrics?format=prometheus`), and each nats-server's messages and bytes (its `/varz`).
 * bench:profile prints them next to the CPU: commits per pair is what the cluster's cost follows.
 */
/** Each node's group commits (its `roster_log_commit_entries` histogram) and each nats-server's traffic (/varz). */
interface LogCounts {
  nodes: { url: string; commits: number; entries: number }[];
  nats: { name: string; inMsgs: number; outMsgs: number; inBytes: number; outBytes: number }[];
}

export interface LogWindow {
  nodes: { node: string; commits: number; entries: number }[];
  /** Summed over the nats-servers (a message routed between two counts at both). */
  nats?: { inMsgs: number; outMsgs: number; inBytes: number; outBytes: number };
}

/** A node's commits and entries so far: the count and sum of its entries-per-commit histogram. */
async function commitsOf(url: string): Promise<{ url: string; commits: number; entries: number }> {
  const text = await (await fetch(`${url}/v1/agent/metrics?format=prometheus`, { signal: AbortSignal.timeout(5000) })).text();
  let commits = 0;
  let entries = 0;
  for (const line of text.split('\n')) {
    const m = /^roster_log_commit_entries_(sum|count)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null) continue;
    if (m[1] === 'sum') entries += Number(m[2]);
    else commits += Number(m[2]);
  }
  return { url, commits, entries };
}

async function natsTrafficOf(name: string, monitorUrl: string): Promise<LogCounts['nats'][number]> {
  const v = await (await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(5000) })).json() as Record<string, number>;
  return { name, inMsgs: v.in_msgs ?? 0, outMsgs: v.out_msgs ?? 0, inBytes: v.in_bytes ?? 0, outBytes: v.out_bytes ?? 0 };
}

/** Reads the counts at the window's ends (started by the same timers as the CPU snapshots). */
export class LogMeter {
  private start: Promise<LogCounts> | undefined;
  private end: Promise<LogCounts> | undefined;
  constructor(private readonly nodeUrls: string[], private readonly nats: { name: string; monitorUrl: string }[]) {}
  private read(): Promise<LogCounts> {
    return Promise.all([
      Promise.all(this.nodeUrls.map((u) => commitsOf(u))),
      Promise.all(this.nats.map((n) => natsTrafficOf(n.name, n.monitorUrl))),
    ]).then(([nodes, nats]) => ({ nodes, nats }));
  }
  atStart(): void { this.start = this.read(); this.start.catch(() => undefined); }
  atEnd(): void { this.end = this.read(); this.end.catch(() => undefined); }
  /** The differences, once both ends were read; the node names are given in the order of the urls. */
  async finish(nodeNames: string[]): Promise<LogWindow> {
    if (this.start === undefined || this.end === undefined) throw new Error('the window ended before the logs could be read');
    const [a, b] = await Promise.all([this.start, this.end]);
    const nodes = b.nodes.map((n, k) => ({
      node: nodeNames[k] ?? n.url, commits: n.commits - a.nodes[k]!.commits, entries: n.entries - a.nodes[k]!.entries,
    }));
    if (b.nats.length === 0) return { nodes };
    const sum = (key: 'inMsgs' | 'outMsgs' | 'inBytes' | 'outBytes') => b.nats.reduce((t, n, k) => t + n[key] - a.nats[k]![key], 0);
    return { nodes, nats: { inMsgs: sum('inMsgs'), outMsgs: sum('outMsgs'), inBytes: sum('inBytes'), outBytes: sum('outBytes') } };
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const per = (x: number, n: number) => (n > 0 ? x / n : Number.NaN);

/** The log's lines: commits and entries per node (the proposer's), and the nats-servers' traffic per pair. */
export function logReport(log: LogWindow, pairs: number): string[] {
  const commits = log.nodes.reduce((t, n) => t + n.commits, 0);
  const entries = log.nodes.reduce((t, n) => t + n.entries, 0);
  const out = [`log over the window: ${n0(commits)} group commits carrying ${n0(entries)} entries (${per(entries, commits).toFixed(1)} per commit; `
    + `${per(commits, pairs).toFixed(2)} commits per pair)`];
  if (log.nodes.length > 1) {
    for (const n of log.nodes) out.push(`  ${n.node.padEnd(10)} ${n0(n.commits).padStart(7)} commits, ${n0(n.entries).padStart(7)} entries (${per(n.entries, n.commits).toFixed(1)} per commit)`);
  }
  const t = log.nats;
  if (t !== undefined) {
    out.push(`nats-servers over the window (summed; a routed message counts at both ends): ${n0(t.inMsgs)} messages in, ${n0(t.outMsgs)} out `
      + `(${per(t.inMsgs, pairs).toFixed(1)} and ${per(t.outMsgs, pairs).toFixed(1)} per pair); ${(t.inBytes / 1e6).toFixed(1)} MB in, ${(t.outBytes / 1e6).toFixed(1)} MB out `
      + `(${(per(t.inBytes, pairs) / 1000).toFixed(1)} and ${(per(t.outBytes, pairs) / 1000).toFixed(1)} KB per pair)`);
  }
  return out;
}
