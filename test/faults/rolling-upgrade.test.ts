// Goal: a rolling upgrade of a three-node cluster loses nothing. Three nats-servers and three nodes of an
// older release (the tree of commit `oldCommit`, run from the sources with today's node_modules, which keep
// among the dev dependencies what only that release imports: parse-duration) take a
// lock and write load; each node in turn is stopped (SIGTERM) and started again from the current code on
// the same data dir and ports, the load running throughout. Then: every acknowledged write reads back
// from every node, no lock was definitely held by two sessions at once (test/checker/mutex-intervals.ts),
// and write indexes only grew in real-time order. One node is then rolled back to the old release, which
// reads what the current code wrote. Skipped, saying why, when the repository has no such
// commit (a shallow clone).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, natsConfigText, uniqueClusterName, waitJetStreamReady, withFreshStarts } from '../../cluster/dev/nats-launcher.ts';
import { HistoryRecorder } from '../checker/history.ts';
import { mutualExclusion } from '../checker/mutex-intervals.ts';
import { repoRoot, tsxLoader } from '../support/agent.ts';
import { http, indexOf, NatsNode, sleep, type Answer } from './cluster-harness.ts';

/** The release the cluster starts on: the log and snapshot formats before they carried a version. */
const oldCommit = '84b6a98';
const names = ['n1', 'n2', 'n3'] as const;
const lockKeys = ['upgrade/lock/shared', 'upgrade/lock/a', 'upgrade/lock/b'];
/** Load between two upgrades, after the upgraded node caught up. */
const loadBetweenMs = 6_000;
const requestTimeoutMs = 10_000;
const snapshotEvery = 500;

function hasCommit(): boolean {
  try {
    execFileSync('git', ['-C', repoRoot, 'cat-file', '-e', `${oldCommit}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const present = hasCommit();
if (!present) console.log(`[rolling-upgrade] skipped: commit ${oldCommit} is not in this repository (a shallow clone?)`);

/** A Roster node started from one tree of sources or another on fixed ports and data dir. */
class Node {
  proc: ChildProcess | undefined;
  out = '';
  constructor(readonly name: string, readonly httpPort: number, readonly args: string[]) {}
  get url(): string { return `http://127.0.0.1:${this.httpPort}`; }
  running(): boolean { return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null; }

  async start(tree: string): Promise<void> {
    const proc = spawn(process.execPath, ['--import', tsxLoader, join(tree, 'src/main.ts'), ...this.args], { cwd: tree, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    // The output of this incarnation only: the checks below ask what the process of one release did.
    this.out = '';
    const keep = (d: Buffer): void => { this.out = (this.out + d.toString()).slice(-200_000); };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    for (const deadline = Date.now() + 90_000; !/roster listening http=/.test(this.out.slice(-20_000));) {
      if (!this.running()) throw new Error(`${this.name} exited (${proc.exitCode}) before ready:\n${this.out.slice(-6000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} not ready:\n${this.out.slice(-6000)}`);
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    if (!this.running()) return;
    const exited = new Promise((res) => this.proc!.once('exit', res));
    this.proc!.kill('SIGTERM');
    await exited;
  }
}

const history = new HistoryRecorder();
const now = (): number => performance.now();
interface Write { key: string; value: string; callMs: number; returnMs: number; index: number }
const acked: Write[] = [];
const counts = { acquired: 0, refused: 0, unknown: 0, writes: 0, writeUnknown: 0 };
let root = '';
let oldTree = '';
let nats: NatsNode[] = [];
let nodes: Node[] = [];

/** Any running node, the client's own first: a client moves on while its node is being replaced. */
function pick(k: number): Node | undefined {
  return [...nodes.slice(k % 3), ...nodes.slice(0, k % 3)].find((n) => n.running());
}

async function call(k: number, method: string, path: string, body?: string | object): Promise<Answer> {
  const n = pick(k);
  if (n === undefined) return { status: 0, text: '', headers: new Headers(), error: 'no node', json: () => undefined as never };
  return http(n.url, method, path, { body, timeoutMs: requestTimeoutMs });
}

/** One client: a session of its own (no node checks: it outlives the node it was made on), then pairs. */
async function client(k: number, stop: () => boolean): Promise<void> {
  let sid: string | undefined;
  while (sid === undefined && !stop()) {
    const a = await call(k, 'PUT', '/v1/session/create', { Name: `c${k}`, NodeChecks: [], LockDelay: '0s' });
    if (a.status === 200) sid = a.json<{ ID: string }>().ID; else await sleep(200);
  }
  for (let seq = 0; !stop(); seq++) {
    const key = lockKeys[(k + seq) % 2 === 0 ? 0 : 1 + (k % 2)]!;
    const h = history.invoke(`c${k}`, key, 'acquire', sid);
    const a = await call(k, 'PUT', `/v1/kv/${key}?acquire=${sid}`, `c${k}-${seq}`);
    if (a.status === 200 && a.text.trim() === 'true') { h.ok(true); counts.acquired++; } else if (a.status === 200 || a.status === 409) { h.ok(false); counts.refused++; } else { h.unknown(); counts.unknown++; }
    await write(k, `upgrade/w/c${k}/${seq}`, `c${k}-${seq}`);
    // A release is retried until answered: the lock must not stay held by a client that moved on.
    for (;;) {
      const r = history.invoke(`c${k}`, key, 'release', sid);
      const b = await call(k, 'PUT', `/v1/kv/${key}?release=${sid}`);
      if (b.status === 200 || b.status === 409) { r.ok(b.text.trim() === 'true'); break; }
      r.unknown();
      await sleep(100);
    }
  }
}

async function write(k: number, key: string, value: string): Promise<void> {
  const callMs = now();
  const a = await call(k, 'PUT', `/v1/kv/${key}`, value);
  if (a.status === 200 && a.text.trim() === 'true') {
    acked.push({ key, value, callMs, returnMs: now(), index: indexOf(a) ?? NaN });
    counts.writes++;
  } else counts.writeUnknown++;
}

let txns = 0;

/** A one-operation transaction (command txn.kv, which the old release does not know) through `n`, setting `key`. */
function txnThrough(n: Node, key = `upgrade/txn/${++txns}`): Promise<Answer> {
  return http(n.url, 'PUT', '/v1/txn', { body: [{ KV: { Verb: 'set', Key: key, Value: Buffer.from('t').toString('base64') } }], timeoutMs: requestTimeoutMs });
}

/**
 * A transaction through `n` is refused (503, code 1016) naming each node in `behind` as running an older
 * release, and nothing is written: gossip has told `n` the others' command levels.
 */
async function expectTxnRefused(n: Node, behind: string[]): Promise<void> {
  const key = `upgrade/txn/${++txns}`;
  const a = await txnThrough(n, key);
  expect(a.status, a.text).toBe(503);
  const body = a.json<{ code: number; message: string; details: { needsCommandLevel: number; behind: { node: string }[] } }>();
  expect(body.code).toBe(1016);
  expect(body.details.behind.map((b) => b.node).sort()).toEqual([...behind].sort());
  expect(body.message).toMatch(/finish the rolling upgrade/);
  const read = await http(n.url, 'GET', `/v1/kv/${key}?consistent`, { timeoutMs: requestTimeoutMs });
  expect(read.status).toBe(404);
}

/** The node serves and has caught up: a write through it, then a consistent read of it there. */
async function caughtUp(n: Node): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let k = 0; ; k++) {
    const key = `upgrade/probe/${n.name}/${k}`;
    const w = await http(n.url, 'PUT', `/v1/kv/${key}`, { body: 'x', timeoutMs: 5_000 });
    const r = w.status === 200 ? await http(n.url, 'GET', `/v1/kv/${key}?consistent`, { timeoutMs: 5_000 }) : w;
    if (r.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${n.name} not caught up: ${r.status} ${r.error ?? r.text}\n${n.out.slice(-6000)}`);
    await sleep(250);
  }
}

type Ports = { name: string; client: number; cluster: number; monitor: number; http: number; gossip: number }[];

/** Three routed nats-servers on fresh ports, ready to place the log; begun again when a start fails in a way a new start cures. */
async function startNats(): Promise<Ports> {
  return withFreshStarts(async () => {
    const ports: Ports = [];
    for (const name of names) ports.push({ name, client: await freePort(), cluster: await freePort(), monitor: await freePort(), http: await freePort(), gossip: await freePort() });
    const clusterName = uniqueClusterName();
    nats = ports.map((p) => {
      const conf = join(root, `nats-${p.name}-${p.client}.conf`);
      writeFileSync(conf, natsConfigText({
        name: p.name, client: p.client, monitor: p.monitor, storeDir: join(root, `js-${p.name}-${p.client}`),
        cluster: { name: clusterName, port: p.cluster, routes: ports.filter((q) => q !== p).map((q) => q.cluster) },
      }));
      return new NatsNode(p.name, p.client, p.cluster, p.monitor, conf);
    });
    try {
      await Promise.all(nats.map((s) => s.start()));
      await waitJetStreamReady(nats.map((s) => s.url));
    } catch (err) {
      await Promise.all(nats.map((s) => s.kill()));
      throw err;
    }
    return ports;
  });
}

async function startCluster(oldTree: string): Promise<void> {
  const ports = await startNats();
  const urls = nats.map((s) => s.url).join(',');
  nodes = ports.map((p) => {
    const dataDir = join(root, `data-${p.name}`);
    mkdirSync(dataDir);
    return new Node(p.name, p.http, [
      '--http-port', String(p.http), '--grpc-port', '0', '--data-dir', dataDir, '--node-name', p.name, '--nats', urls,
      '--gossip-listen', `127.0.0.1:${p.gossip}`, ...ports.flatMap((q) => ['--join', `127.0.0.1:${q.gossip}`]),
      // Snapshots while the old nodes run: the first upgraded node opens from a record in the old format.
      '--snapshot-every', String(snapshotEvery),
    ]);
  });
  for (const n of nodes) await n.start(oldTree);
  for (const n of nodes) await caughtUp(n);
}

beforeAll(async () => {
  if (!present) return;
  root = mkdtempSync(join(tmpdir(), 'roster-upgrade-'));
  oldTree = join(root, 'old');
  mkdirSync(oldTree);
  execFileSync('sh', ['-c', `git -C "${repoRoot}" archive ${oldCommit} | tar -x -C "${oldTree}"`]);
  symlinkSync(join(repoRoot, 'node_modules'), join(oldTree, 'node_modules'));
  // The old tree predates the format versions: its nodes write the unversioned form.
  expect(existsSync(join(oldTree, 'src/log/format-version.ts'))).toBe(false);
  await startCluster(oldTree);
}, 300_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
  await Promise.all(nats.map((s) => s.kill().catch(() => undefined)));
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!present)(`rolling upgrade from ${oldCommit} to the current code`, () => {
  test('nodes replaced one at a time under a lock load: nothing lost, no two holders, indexes grow', async () => {
    const startMs = Date.now();
    let stopping = false;
    const clients = [0, 1, 2, 3].map((k) => client(k, () => stopping));
    try {
      await sleep(loadBetweenMs);
      for (const [k, n] of nodes.entries()) {
        const before = counts.writes;
        await n.stop();
        await n.start(repoRoot);
        await caughtUp(n);
        await sleep(loadBetweenMs);
        console.log(`[rolling-upgrade] ${n.name} upgraded; ${counts.writes - before} writes acknowledged meanwhile`);
        expect(nodes.every((x) => x.running()), nodes.map((x) => `${x.name}: ${x.out.slice(-3000)}`).join('\n')).toBe(true);
        // While older nodes run, a command they do not know is refused by the upgraded one, naming them.
        if (k < nodes.length - 1) await expectTxnRefused(n, nodes.slice(k + 1).map((x) => x.name));
      }
      const txn = await txnThrough(nodes[0]!);
      expect(txn.status, txn.text).toBe(200);
      // Rolling back one node works as well: the current code wrote nothing the old release cannot read.
      await nodes[1]!.stop();
      await nodes[1]!.start(oldTree);
      await caughtUp(nodes[1]!);
      await sleep(loadBetweenMs);
      console.log('[rolling-upgrade] n2 rolled back to the old release');
      expect(nodes[1]!.out).toMatch(/JetStream log: loaded a snapshot/);
      await expectTxnRefused(nodes[0]!, ['n2']);
      expect(nodes.every((x) => x.running()), nodes.map((x) => `${x.name}: ${x.out.slice(-3000)}`).join('\n')).toBe(true);
    } finally {
      stopping = true;
      await Promise.all(clients);
    }
    console.log(`[rolling-upgrade] ${JSON.stringify(counts)} in ${((Date.now() - startMs) / 1000).toFixed(1)} s`);
    expect(counts.acquired).toBeGreaterThan(20);
    expect(counts.writes).toBeGreaterThan(50);
    // The first node upgraded opened from a snapshot record an old node wrote, then read old commits.
    expect(nodes[0]!.out).toMatch(/JetStream log: loaded a snapshot/);

    const mutex = mutualExclusion(history.ops());
    expect(mutex.overlaps).toEqual([]);
    const sorted = [...acked].sort((x, y) => x.returnMs - y.returnMs);
    const regressions = sorted.flatMap((w) => sorted.filter((v) => v.callMs > w.returnMs && !(v.index > w.index)).map((v) => `${w.key}@${w.index} then ${v.key}@${v.index}`));
    expect(regressions.slice(0, 5)).toEqual([]);
    for (const n of nodes) {
      const a = await http(n.url, 'GET', '/v1/kv/upgrade/w/?recurse&consistent', { timeoutMs: 20_000 });
      expect(a.status).toBe(200);
      const values = new Map(a.json<{ Key: string; Value: string }[]>().map((e) => [e.Key, Buffer.from(e.Value, 'base64').toString()]));
      expect(acked.filter((w) => values.get(w.key) !== w.value).map((w) => `${n.name} lost ${w.key}`)).toEqual([]);
    }
  }, 360_000);
});
