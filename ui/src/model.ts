/**
 * What the dashboard shows, derived from the stream's views and two HTTP lists. Pure functions of
 * their inputs: the item shapes are those of the HTTP API (README "Reference").
 */

export type Status = 'passing' | 'warning' | 'critical' | 'maintenance';

export interface Check {
  Node: string;
  CheckID: string;
  Name: string;
  Status: string;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  Type: string;
}

export interface HealthEntry {
  Node: { Node: string; Address: string };
  Service: { ID: string; Service: string; Tags: string[] | null; Address: string; Port?: number };
  Checks: Check[];
}

export interface Session {
  ID: string;
  Name: string;
  Node: string;
  Behavior: string;
  TTL: string;
  LockDelay: number;
  NodeChecks: string[] | null;
  ServiceChecks: { ID: string }[] | null;
}

/** Nanoseconds of each unit of a Go duration. */
const unitNs: Record<string, number> = { ns: 1, us: 1e3, '\u00b5s': 1e3, '\u03bcs': 1e3, ms: 1e6, s: 1e9, m: 6e10, h: 3.6e12 };

/**
 * A session's TTL as shown, or undefined when it has none: the agent keeps the duration as it was sent, and
 * a zero one (`0s`, `0`, `0m0s`; a term under a nanosecond is dropped, as Go drops it) means no TTL, as an
 * empty one does. The agent took it, so it is a Go duration: its terms are a number and a unit each.
 */
export function sessionTtl(s: Pick<Session, 'TTL'>): string | undefined {
  const terms = [...s.TTL.matchAll(/([0-9.]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/g)];
  return terms.some(([, n, unit]) => Number(n) * unitNs[unit!]! >= 1) ? s.TTL : undefined;
}

export interface KvEntry {
  Key: string;
  Session?: string;
  LockIndex: number;
}

export interface CatalogNode {
  Node: string;
  Address: string;
  Meta: Record<string, string> | null;
}

export interface Member {
  Name: string;
  Addr: string;
  Port: number;
  Status: number;
}

/** Consul's order of severity (watch.md §2): maintenance > critical > warning > passing. */
const severity: Record<string, number> = { passing: 0, warning: 1, critical: 2, maintenance: 3 };

/** The aggregate of several checks; no checks at all counts as passing, as Consul's AggregatedStatus. */
export function worst(statuses: Iterable<string>): Status {
  let out: Status = 'passing';
  for (const s of statuses) if ((severity[s] ?? 2) > severity[out]!) out = (s in severity ? s : 'critical') as Status;
  return out;
}

export interface ServiceRow {
  name: string;
  status: Status;
  instances: HealthEntry[];
  /** Instances by their own aggregate status. */
  byStatus: Record<Status, number>;
  tags: string[];
  nodes: string[];
}

/** One row per service name: its instances and the worst status among them (service and node checks). */
export function serviceRows(entries: Iterable<HealthEntry>): ServiceRow[] {
  const rows = new Map<string, ServiceRow>();
  for (const e of entries) {
    const name = e.Service.Service;
    let row = rows.get(name);
    if (row === undefined) {
      row = { name, status: 'passing', instances: [], byStatus: { passing: 0, warning: 0, critical: 0, maintenance: 0 }, tags: [], nodes: [] };
      rows.set(name, row);
    }
    const status = worst(e.Checks.map((c) => c.Status));
    row.instances.push(e);
    row.byStatus[status] += 1;
    row.status = worst([row.status, status]);
    for (const t of e.Service.Tags ?? []) if (!row.tags.includes(t)) row.tags.push(t);
    if (!row.nodes.includes(e.Node.Node)) row.nodes.push(e.Node.Node);
  }
  return [...rows.values()].sort((a, b) => compare(a.name, b.name));
}

export interface NodeRow {
  name: string;
  address: string;
  status: Status;
  /** The member's gossip status (alive, leaving, left, failed), when it is a member. */
  member: string | undefined;
  services: string[];
  checks: number;
  meta: Record<string, string>;
}

const memberStatus: Record<number, string> = { 0: 'none', 1: 'alive', 2: 'leaving', 3: 'left', 4: 'failed' };

/** Nodes of the catalog, and nodes known only from the stream (a check or service seen before the list). */
export function nodeRows(nodes: CatalogNode[], members: Member[], checks: Iterable<Check>, entries: Iterable<HealthEntry>): NodeRow[] {
  const rows = new Map<string, NodeRow>();
  const row = (name: string) => {
    let r = rows.get(name);
    if (r === undefined) {
      r = { name, address: '', status: 'passing', member: undefined, services: [], checks: 0, meta: {} };
      rows.set(name, r);
    }
    return r;
  };
  for (const n of nodes) Object.assign(row(n.Node), { address: n.Address, meta: n.Meta ?? {} });
  for (const m of members) row(m.Name).member = memberStatus[m.Status] ?? String(m.Status);
  for (const c of checks) {
    const r = row(c.Node);
    r.checks += 1;
    // A node's health is its node-level checks; service checks show on their services.
    if (c.ServiceID === '') r.status = worst([r.status, c.Status]);
  }
  for (const e of entries) {
    const r = row(e.Node.Node);
    if (r.address === '') r.address = e.Node.Address;
    if (!r.services.includes(e.Service.Service)) r.services.push(e.Service.Service);
  }
  return [...rows.values()].sort((a, b) => compare(a.name, b.name));
}

/** The checks of some health entries (each instance's own and its node's), once each, by `node/checkID`. */
export function checksOf(entries: Iterable<HealthEntry>): Map<string, Check> {
  const checks = new Map<string, Check>();
  for (const e of entries) for (const c of e.Checks) checks.set(`${c.Node}/${c.CheckID}`, c);
  return checks;
}

/** Checks, worst first, then by node and check id. */
export function checkRows(checks: Iterable<Check>): Check[] {
  return [...checks].sort((a, b) => (severity[b.Status] ?? 2) - (severity[a.Status] ?? 2) || compare(a.Node, b.Node) || compare(a.CheckID, b.CheckID));
}

export interface SessionRow {
  session: Session;
  /** KV keys whose Session is this one: the locks it holds. */
  locks: KvEntry[];
}

export function sessionRows(sessions: Iterable<Session>, locks: Iterable<KvEntry>): SessionRow[] {
  const held = new Map<string, KvEntry[]>();
  for (const e of locks) {
    if (e.Session === undefined) continue;
    held.set(e.Session, [...(held.get(e.Session) ?? []), e]);
  }
  return [...sessions]
    .map((session) => ({ session, locks: (held.get(session.ID) ?? []).sort((a, b) => compare(a.Key, b.Key)) }))
    .sort((a, b) => compare(a.session.Node, b.session.Node) || compare(a.session.Name, b.session.Name) || compare(a.session.ID, b.session.ID));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
