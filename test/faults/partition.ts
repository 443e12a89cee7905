/**
 * A network partition between two groups of local processes that all talk over loopback (127.0.0.1),
 * made with nftables: a dedicated `inet` table `roster_test_<pid>[_n]` that this module creates and
 * always deletes (it never lists, changes or deletes any other table).
 *
 * Why not ports alone: on loopback every process shares 127.0.0.1, and a connection one side opens
 * comes from an ephemeral port, so "nats-server n1 ↔ nats-server n2" cannot be told from "n3 ↔ n2" by
 * ports. Why not network namespaces: the processes are started by the shared harness in the root
 * namespace, and a running process cannot be moved into another one. So the partition names each side
 * by its processes, and cuts in two ways, both on the output hook of `lo` (every loopback packet passes
 * it once, with the sending socket attached):
 *
 * 1. **Connections open at the cut**: `ss -tanp` lists every TCP socket with its owning pid, so the
 *    exact port pairs of the connections between the two sides are known; their packets are dropped,
 *    in both directions (a pair is exact, so a runner connection that later reuses one of those
 *    ephemeral ports is not hit).
 * 2. **Connections opened during the cut**: each side's processes are moved into their own cgroup v2
 *    directory (`roster_test_<pid>_a|b`, created here, removed at heal) so sockets they create from now on
 *    carry it; a packet from a new socket of one side to a (listening) port of the other is dropped, so
 *    a SYN across the cut never arrives. (A socket's cgroup is fixed when the socket is created, which
 *    is why rule 1 is needed for older sockets.) Nothing is dropped for processes in neither side (the
 *    test runner keeps talking to every node over HTTP). Limit: a listener opened after the cut is not
 *    known to the rules (Roster and nats-server open theirs at start).
 *
 * Packets are dropped, not rejected: connections across the cut hang as on a real network, until the
 * applications' own timeouts notice. `heal()` deletes the table and moves the processes back; it is
 * idempotent and safe to call from `afterAll` after a failure.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Partition {
  /** The nftables table holding the rules (`inet` family). */
  table: string;
  /** Listening ports of each side at the cut. */
  listening: { a: number[]; b: number[] };
  /** Port pairs `from . to` of the connections across the cut when it was made (both directions). */
  pairs: string[];
  /** The rule set as loaded, for the test log. */
  ruleset: string;
  /** Deletes the table and the cgroups; moves the processes back. Never throws. */
  heal(): Promise<void>;
}

let tablesMade = 0;
/** Everything not yet healed, so `healAll` (afterAll) can clean up after a failed test. */
const open = new Set<Partition>();

/** Why partitions cannot be made here (not root, no nft, no ss, no cgroup v2), or undefined when they can. */
export function partitionUnavailable(): string | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'partitions need root (nftables, cgroups)';
  for (const tool of ['nft', 'ss']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      return `partitions need \`${tool}\` on PATH (Debian: apt-get install -y ${tool === 'nft' ? 'nftables' : 'iproute2'})`;
    }
  }
  if (cgroup2Root() === undefined) return 'partitions need a mounted cgroup v2 hierarchy (type cgroup2 in /proc/mounts)';
  return undefined;
}

/** Where cgroup v2 is mounted (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified` on hybrid systems). */
function cgroup2Root(): string | undefined {
  const line = readFileSync('/proc/mounts', 'utf8').split('\n').find((l) => l.split(' ')[2] === 'cgroup2');
  return line?.split(' ')[1];
}

/** The pid's cgroup v2 path relative to the hierarchy root (`/` when none). */
function cgroupOf(pid: number): string {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'));
  return line === undefined ? '/' : line.slice(3);
}

interface SocketRow { state: string; localPort: number; peerPort: number; pids: number[] }

/** Every TCP socket (any state) with its ports and owning pids, from `ss -tanpH`. */
function tcpSockets(): SocketRow[] {
  const out = execFileSync('ss', ['-tanpH'], { encoding: 'utf8' });
  const port = (addr: string) => Number(addr.slice(addr.lastIndexOf(':') + 1));
  const rows: SocketRow[] = [];
  for (const line of out.split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 5) continue;
    const pids = [...line.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
    rows.push({ state: cols[0]!, localPort: port(cols[3]!), peerPort: port(cols[4]!), pids });
  }
  return rows;
}

/**
 * From one `ss` snapshot: each side's listening ports, and the port pairs `[from, to]` (both
 * directions) of every connection between the two sides, open or being opened.
 */
export function crossConnections(rows: SocketRow[], a: number[], b: number[]) {
  const owns = (pids: number[]) => (r: SocketRow) => r.pids.some((q) => pids.includes(q));
  const listen = (pids: number[]) => [...new Set(rows.filter((r) => r.state === 'LISTEN' && owns(pids)(r)).map((r) => r.localPort))].sort((x, y) => x - y);
  const listening = { a: listen(a), b: listen(b) };
  const pairs = new Set<string>();
  for (const [mine, theirs, theirListen] of [[a, b, listening.b], [b, a, listening.a]] as const) {
    for (const r of rows.filter((x) => x.state !== 'LISTEN' && owns(mine)(x))) {
      const peer = rows.find((x) => x.state !== 'LISTEN' && x.localPort === r.peerPort && x.peerPort === r.localPort);
      const across = peer !== undefined ? owns(theirs)(peer) : theirListen.includes(r.peerPort);
      if (across) { pairs.add(`${r.localPort} . ${r.peerPort}`); pairs.add(`${r.peerPort} . ${r.localPort}`); }
    }
  }
  return { listening, pairs: [...pairs].sort() };
}

function nft(script: string): void {
  execFileSync('nft', ['-f', '-'], { input: script, stdio: ['pipe', 'ignore', 'pipe'] });
}

/** Moves a whole process (every thread) into a cgroup v2 directory; false when it is gone. */
function moveTo(dir: string, pid: number): boolean {
  try {
    writeFileSync(join(dir, 'cgroup.procs'), `${pid}\n`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Cuts every TCP connection between the processes `a` and the processes `b` on loopback, and any
 * connection either side opens to the other while the cut lasts.
 */
export async function partition(a: number[], b: number[]): Promise<Partition> {
  const why = partitionUnavailable();
  if (why !== undefined) throw new Error(why);
  const overlap = a.filter((p) => b.includes(p));
  if (overlap.length > 0) throw new Error(`pids on both sides: ${overlap.join(',')}`);
  const root = cgroup2Root()!;
  const name = `roster_test_${process.pid}_${tablesMade++}`;
  const groups = { a: join(root, `${name}_a`), b: join(root, `${name}_b`) };
  /** Relative to /sys/fs/cgroup, which is where nft resolves `socket cgroupv2` paths. */
  const nftPath = (dir: string) => dir.replace(/^\/sys\/fs\/cgroup\//, '');
  const origin = new Map<number, string>();
  for (const pid of [...a, ...b]) origin.set(pid, cgroupOf(pid));

  let healed = false;
  const heal = async (): Promise<void> => {
    if (healed) return;
    healed = true;
    open.delete(p);
    try { nft(`delete table inet ${name}\n`); } catch { /* never created or already gone */ }
    for (const [pid, path] of origin) moveTo(join(root, path), pid);
    for (const dir of Object.values(groups)) {
      // rmdir fails while a process (or a just-exited zombie) is still listed: retry briefly.
      for (let attempt = 0; attempt < 50 && existsSync(dir); attempt++) {
        try { rmdirSync(dir); } catch { await new Promise((r) => setTimeout(r, 20)); }
      }
    }
  };
  const p: Partition = { table: name, listening: { a: [], b: [] }, pairs: [], ruleset: '', heal };
  open.add(p);
  try {
    mkdirSync(groups.a);
    mkdirSync(groups.b);
    // First the cgroups (sockets made from now on are marked), then the port snapshot (every older
    // socket is listed), so no socket falls between the two rules.
    for (const pid of a) moveTo(groups.a, pid);
    for (const pid of b) moveTo(groups.b, pid);
    const { listening, pairs } = crossConnections(tcpSockets(), a, b);
    p.listening = listening;
    p.pairs = pairs;
    const both = listening.a.filter((x) => listening.b.includes(x));
    if (both.length > 0) throw new Error(`ports listened on by both sides: ${both.join(',')}`);
    if (listening.a.length + listening.b.length === 0) throw new Error('neither side listens on a TCP port: nothing to cut');
    const set = (items: (number | string)[]) => (items.length === 0 ? '' : ` elements = { ${items.join(', ')} }`);
    p.ruleset = [
      `table inet ${name} {`,
      `  set a_listen { type inet_service;${set(listening.a)} }`,
      `  set b_listen { type inet_service;${set(listening.b)} }`,
      `  set cut_pairs { type inet_service . inet_service;${set(pairs)} }`,
      '  chain out {',
      '    type filter hook output priority filter; policy accept;',
      '    oifname != "lo" accept',
      '    meta l4proto != tcp accept',
      '    tcp sport . tcp dport @cut_pairs counter drop',
      `    socket cgroupv2 level 1 "${nftPath(groups.a)}" tcp dport @b_listen counter drop`,
      `    socket cgroupv2 level 1 "${nftPath(groups.b)}" tcp dport @a_listen counter drop`,
      '  }',
      '}',
      '',
    ].join('\n');
    nft(p.ruleset);
  } catch (err) {
    await heal();
    throw err;
  }
  return p;
}

/** Heals every partition not yet healed (for afterAll: a failed test must not leave rules behind). */
export async function healAll(): Promise<void> {
  for (const p of [...open]) await p.heal();
}

/** The drop counters of a partition's rules, `[rule text, packets]` (for the test log). */
export function dropCounts(p: Partition): [string, number][] {
  try {
    const out = execFileSync('nft', ['list', 'table', 'inet', p.table], { encoding: 'utf8' });
    return out.split('\n').filter((l) => l.includes('counter packets'))
      .map((l) => [l.trim().replace(/ counter packets.*$/, ''), Number(/packets (\d+)/.exec(l)![1])]);
  } catch {
    return [];
  }
}
