/**
 * Who leads the log and how far each node is, worked out from what the log reports (its status and
 * leadership) and the membership's addresses: pure, so every rule here is unit-tested.
 *
 * A single-node log (the WAL) is led by this node. In a cluster the log's leader is the JetStream
 * stream's leader, a nats server; the Roster node that reports being connected to that server stands
 * for it (the first by name when several are, none when no node is). A node whose report is older than
 * `progressStaleMs` counts as unknown: it neither stands for a server nor shows an index.
 */
import type { LogStatus, NodeProgress } from '../../ports/log.ts';
import type { Member } from '../../ports/membership.ts';

/** A node's progress report older than this is unknown (reports come every second). */
export const progressStaleMs = 5_000;

export type Role = 'Leader' | 'Follower' | 'Candidate';

export interface ViewInput {
  status: LogStatus | undefined;
  /** The last index this node applied. */
  appliedIndex: number;
  nodeName: string;
  /** This node's advertised host:port (its HTTP API). */
  selfAddress: string;
  members: readonly Member[];
  /** False while this node's log cannot store writes (a full disk): then no leader is known. */
  writable: boolean;
}

export interface NodeRow {
  name: string;
  /** host:port of its HTTP API ('' when membership does not know it). */
  address: string;
  /** The nats server it reported being connected to (cluster only). */
  server: string;
  /** undefined: unknown (no fresh report). */
  appliedIndex: number | undefined;
  lag: number | undefined;
  /** Milliseconds since its report was received; undefined when none was. */
  ageMs: number | undefined;
  /** The newest window of the stream it digested (cluster; see cluster/jetstream/digests.ts); undefined when unknown. */
  window: { end: number; sha: string } | undefined;
}

export interface LogView {
  role: Role;
  /** The leader's address (or its nats server's name when no node stands for it), '' when none. */
  leader: string;
  /** Every copy of the log in the same form. */
  peers: string[];
  /** The highest index any node is known to have applied: what lag is counted from. */
  commitIndex: number;
  nodes: NodeRow[];
}

/** The view of the log from this node. */
export function logView(input: ViewInput): LogView {
  const stream = input.status?.stream;
  const applied = input.appliedIndex;
  if (stream === undefined) {
    const row: NodeRow = { name: input.nodeName, address: input.selfAddress, server: '', appliedIndex: applied, lag: 0, ageMs: 0, window: undefined };
    const commitIndex = Math.max(applied, input.status?.lastIndex ?? 0);
    row.lag = commitIndex - applied;
    return { role: 'Leader', leader: input.writable ? input.selfAddress : '', peers: [input.selfAddress], commitIndex, nodes: [row] };
  }
  const fresh = (input.status?.nodes ?? []).map((n) => (n.name === input.nodeName ? { ...n, appliedIndex: applied, ageMs: 0 } : n))
    .filter((n) => n.ageMs <= progressStaleMs);
  const address = addressOf(input);
  const standIn = (server: string, taken: Set<string>): string => {
    const node = fresh.find((n) => n.server === server && !taken.has(n.name));
    if (node === undefined) return server;
    taken.add(node.name);
    return address(node.name);
  };
  const leaderNode = stream.leader === undefined ? undefined : fresh.find((n) => n.server === stream.leader);
  const leader = !input.writable || stream.leader === undefined ? '' : standIn(stream.leader, new Set());
  const taken = new Set<string>();
  const peers = stream.replicas.map((r) => standIn(r.name, taken));
  const commitIndex = Math.max(applied, ...fresh.map((n) => n.appliedIndex));
  const role: Role = stream.leader === undefined ? 'Candidate' : leaderNode?.name === input.nodeName ? 'Leader' : 'Follower';
  return { role, leader, peers, commitIndex, nodes: rows(input, commitIndex, address) };
}

function addressOf(input: ViewInput): (name: string) => string {
  const http = new Map(input.members.map((m) => [m.name, m.http]));
  return (name) => (name === input.nodeName ? input.selfAddress : http.get(name) ?? '');
}

/** One row per node reported or known to membership, this node included, sorted by name. */
function rows(input: ViewInput, commitIndex: number, address: (name: string) => string): NodeRow[] {
  const reported = new Map<string, NodeProgress>((input.status?.nodes ?? []).map((n) => [n.name, n]));
  const window = reported.get(input.nodeName)?.window;
  reported.set(input.nodeName, {
    name: input.nodeName, server: input.status?.stream?.server ?? '', appliedIndex: input.appliedIndex, ageMs: 0, ...(window ? { window } : {}),
  });
  const names = new Set([...reported.keys(), ...input.members.filter((m) => m.status !== 'left').map((m) => m.name)]);
  return [...names].sort().map((name) => {
    const n = reported.get(name);
    const known = n !== undefined && n.ageMs <= progressStaleMs;
    return {
      name, address: address(name), server: n?.server ?? '',
      appliedIndex: known ? n.appliedIndex : undefined, lag: known ? Math.max(0, commitIndex - n.appliedIndex) : undefined,
      ageMs: n?.ageMs, window: known ? n.window : undefined,
    };
  });
}
