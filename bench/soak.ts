/**
 * Soak bench of the logs' disk use: `npm run bench:soak [-- options]`.
 *
 * Writes --writes entries (KV sets over a fixed key space of --keys keys, so the state stays the same
 * size) through the log layer Roster's agents write through, bounded by --seconds, and prints the disk
 * use as it goes:
 *   single   one embedded WAL (src/wal) in a temporary data dir; the applied state is snapshotted every
 *            --snapshot-every entries, as an agent does; printed: the data dir's bytes (wal/ + snap/);
 *   cluster  three nats-servers (cluster/dev/nats-launcher.ts) and three JetStream logs (R3), one per
 *            node, each applying the stream and snapshotting its state every --snapshot-every entries;
 *            the stream is compacted as in an agent (below the oldest start mark of the live nodes),
 *            every --compact-every seconds (2; an agent's 10 s, scaled to the bench's write rate,
 *            about ten times a 3-node agent cluster's); printed: the stream's bytes and messages,
 *            the snapshot bucket's bytes, the compaction point and the three servers' store dirs.
 *            The nats-servers are Debian 13's (2.10.27, fetched into .cache/ by cluster/dev/fetched.ts)
 *            unless ROSTER_NATS_SERVER names a binary: compaction needs a release that replays purges
 *            safely, so on Debian 12's 2.9.10 the stream is never purged and the verdict is GROWING.
 *   restore  an agent loaded with --restore-keys keys through `PUT /v1/txn`, saved with `GET /v1/snapshot`
 *            and restored into a fresh agent and a fresh 3-node cluster (--restore-into) with
 *            `PUT /v1/snapshot`; printed: the snapshot's size, the save and restore times, the time to a
 *            consistent read of the last key, the restoring nodes' memory; checked: the key count and a
 *            sample of values on every node (bench/soak-restore.ts).
 * The disk modes end with a verdict: flat when the use fell at least once and the largest use in the
 * second half of the samples is at most 1.5 × the largest in the first half (a log that kept its
 * history grows linearly and fails it; a run too short for anything to be dropped shows nothing).
 * The HTTP front end is not in the loop: the agents' write path adds nothing to the disk beyond the log.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, lstatSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { JetStreamLog } from '../cluster/index.ts';
import { debianNatsServer } from '../cluster/dev/fetched.ts';
import { natsServerBinary, startNatsCluster, type NatsCluster } from '../cluster/dev/nats-launcher.ts';
import { SystemClock } from '../src/ports/clock.ts';
import type { LogEntry, Proposal, ReplicatedLog } from '../src/ports/log.ts';
import { WalLog } from '../src/wal/index.ts';
import { benchOptions, count, namesOf, parseBenchArgs, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';
import { RestoreLive, restoreSoak, restoreTargets, type RestoreTarget } from './soak-restore.ts';

const modes = ['single', 'cluster', 'restore'] as const;
type Mode = (typeof modes)[number];

interface Options {
  writes: number;
  seconds: number;
  modes: Mode[];
  snapshotEvery: number;
  compactEverySeconds: number;
  keys: number;
  samples: number;
  inFlight: number;
  dataParent: string;
  restoreKeys: number;
  restoreInto: RestoreTarget[];
}

const usage = `usage: npm run bench:soak -- [options]
  --writes <n>            entries written per mode                                   [default 1000000]
  --seconds <s>           time bound per mode: writing stops there, reached or not    [default 600]
  --modes <list>          single, cluster, restore (a comma list)                    [default single,cluster,restore]
  --snapshot-every <n>    entries between a node's snapshots (the agent's default)   [default 20000]
  --compact-every <s>     seconds between compactions in cluster mode (an agent: 10;  [default 2]
                          the bench writes ~10x faster than a 3-node agent cluster)
  --keys <n>              key space the writes cycle over (the state's size)          [default 10000]
  --samples <n>           disk use readings per mode                                  [default 20]
  --in-flight <n>         appends waiting at once (group commit batches them)         [default 512]
  --data-parent <dir>     where the temporary data dirs are made                      [default: os.tmpdir()]
  --restore-keys <n>      restore: keys loaded, saved and restored                    [default 1000000]
  --restore-into <list>   restore: single (a fresh agent), cluster (a fresh 3-node one) [default single,cluster]`;

function parseOptions(argv: string[]): Options {
  const v = parseBenchArgs(argv, {
    writes: { type: 'string' }, seconds: { type: 'string' }, modes: { type: 'string' }, 'snapshot-every': { type: 'string' },
    'compact-every': { type: 'string' }, keys: { type: 'string' }, samples: { type: 'string' }, 'in-flight': { type: 'string' }, 'data-parent': { type: 'string' },
    'restore-keys': { type: 'string' }, 'restore-into': { type: 'string' },
  });
  return {
    writes: count('writes', v.writes, 1_000_000, 1000, 1e9),
    seconds: seconds('seconds', v.seconds, 600),
    modes: namesOf('modes', v.modes, modes),
    snapshotEvery: count('snapshot-every', v['snapshot-every'], 20_000, 100, 1e8),
    compactEverySeconds: seconds('compact-every', v['compact-every'], 2),
    keys: count('keys', v.keys, 10_000, 1, 1e7),
    samples: count('samples', v.samples, 20, 2, 1000),
    inFlight: count('in-flight', v['in-flight'], 512, 1, 65_536),
    dataParent: v['data-parent'] ?? tmpdir(),
    restoreKeys: count('restore-keys', v['restore-keys'], 1_000_000, 1, 1e8),
    restoreInto: namesOf('restore-into', v['restore-into'], restoreTargets),
  };
}

// ---------------------------------------------------------------- disk and state

/** Bytes of the regular files under `path`, recursively; 0 when it is gone. */
function bytesUnder(path: string): number {
  try {
    const st = lstatSync(path);
    if (!st.isDirectory()) return st.size;
    return readdirSync(path).reduce((n, name) => n + bytesUnder(join(path, name)), 0);
  } catch {
    return 0;
  }
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** One node's applied state: the keys' last values; snapshotted every `every` entries, one at a time. */
class Applier {
  private readonly kv = new Map<string, string>();
  private lastSnapshot = 0;
  private saving = false;
  index = 0;

  constructor(private readonly log: ReplicatedLog, private readonly every: number) {}

  apply(entries: readonly LogEntry[]): void {
    for (const e of entries) {
      const cmd = e.cmd as { t: string; key?: string; value?: string };
      if (cmd.t === 'kv.set' && cmd.key !== undefined) this.kv.set(cmd.key, cmd.value ?? '');
      this.index = e.index;
    }
    if (this.saving || this.index - this.lastSnapshot < this.every) return;
    this.saving = true;
    const index = this.index;
    this.log.saveSnapshot({ index, data: [...this.kv] })
      .then(() => { this.lastSnapshot = index; }, (err: unknown) => process.stderr.write(`bench: snapshot at ${index} failed: ${String(err)}\n`))
      .finally(() => { this.saving = false; });
  }
}

// ---------------------------------------------------------------- the write load

interface Sample { writes: number; elapsedS: number; bytes: number; detail: string }

/**
 * Appends `o.writes` single-entry proposals (at most `o.inFlight` waiting), spread over `logs`, until done
 * or `o.seconds` passed, taking `o.samples` readings of `read()` on the way.
 */
async function load(o: Options, logs: ReplicatedLog[], read: () => Promise<{ bytes: number; detail: string }>): Promise<Sample[]> {
  const samples: Sample[] = [];
  const every = Math.ceil(o.writes / o.samples);
  const started = Date.now();
  const deadline = started + o.seconds * 1000;
  const value = 'v'.repeat(64);
  let next = 0;
  let failure: unknown;
  const writer = async (): Promise<void> => {
    while (next < o.writes && Date.now() < deadline && failure === undefined) {
      const k = next++;
      const p: Proposal = { pid: `soak-${k}`, cmd: { t: 'kv.set', key: `soak/${k % o.keys}`, value, flags: '0' } };
      await logs[k % logs.length]!.append([p]).catch((err: unknown) => { failure ??= err; });
    }
  };
  let sampled = 0;
  const sampler = (async () => {
    while (sampled < o.samples && failure === undefined) {
      const target = Math.min(o.writes, (sampled + 1) * every);
      while (next < target && Date.now() < deadline && failure === undefined) await new Promise((r) => setTimeout(r, 50));
      const r = await read();
      const s: Sample = { writes: next, elapsedS: (Date.now() - started) / 1000, ...r };
      samples.push(s);
      process.stdout.write(`  ${String(s.writes).padStart(9)} writes  ${s.elapsedS.toFixed(0).padStart(5)} s  ${mib(s.bytes).padStart(10)}  ${s.detail}\n`);
      sampled += 1;
      if (Date.now() >= deadline) break;
    }
  })();
  await Promise.all(Array.from({ length: o.inFlight }, writer));
  await sampler;
  if (failure !== undefined) throw failure;
  return samples;
}

/**
 * Flat when the second half's largest reading is at most 1.5 × the first half's and the use fell at
 * least once (something was dropped); a run too short for any drop shows nothing either way.
 */
function verdict(samples: Sample[]): { flat: boolean; text: string } {
  const half = Math.floor(samples.length / 2);
  const peak = (xs: Sample[]): number => Math.max(...xs.map((s) => s.bytes));
  const first = peak(samples.slice(0, half));
  const second = peak(samples.slice(half));
  const dropped = samples.some((s, k) => k > 0 && s.bytes < samples[k - 1]!.bytes);
  const flat = dropped && second <= 1.5 * first;
  const writes = samples.at(-1)?.writes ?? 0;
  const word = flat ? 'flat' : dropped ? 'GROWING' : 'NOT SHOWN (nothing was dropped during the run: raise --writes)';
  return { flat, text: `${writes} writes: peak ${mib(first)} in the first half, ${mib(second)} in the second: ${word}` };
}

// ---------------------------------------------------------------- the modes

async function single(o: Options, parent: string): Promise<Sample[]> {
  const dir = join(parent, 'single');
  const log = new WalLog({ dir, clock: new SystemClock() });
  await log.open();
  const applier = new Applier(log, o.snapshotEvery);
  log.subscribe(0, (entries) => applier.apply(entries));
  process.stdout.write('single node (embedded WAL): writes, elapsed, data dir (wal/ + snap/)\n');
  try {
    return await load(o, [log], async () => ({
      bytes: bytesUnder(dir), detail: `wal ${mib(bytesUnder(join(dir, 'wal')))}, snap ${mib(bytesUnder(join(dir, 'snap')))}, index ${applier.index}`,
    }));
  } finally {
    await log.close();
  }
}

/** The JetStream store dir of a launched server, from its config path on its command line. */
function storeDirOf(pid: number, name: string): string {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return join(dirname(args[args.indexOf('-c') + 1]!), name);
}

async function cluster(o: Options, nats: NatsCluster): Promise<Sample[]> {
  const stream = 'ROSTER_SOAK';
  const bucket = 'ROSTER_SOAK_SNAPSHOTS';
  const logs = nats.servers.map((s, k) => new JetStreamLog({
    servers: [s.url, ...nats.urls.filter((u) => u !== s.url)], stream, snapshotBucket: bucket, replicas: 3,
    nodeName: `soak${k + 1}`, clock: new SystemClock(), compactEveryMs: Math.round(o.compactEverySeconds * 1000),
  }));
  const stores = nats.servers.map((s) => storeDirOf(s.pid, s.name));
  const nc: NatsConnection = await connect({ servers: nats.urls });
  try {
    for (const log of logs) await log.open();
    for (const log of logs) {
      const applier = new Applier(log, o.snapshotEvery);
      log.subscribe(0, (entries) => applier.apply(entries));
    }
    const jsm = await jetstreamManager(nc);
    process.stdout.write('3-node cluster (JetStream R3): writes, elapsed, store dirs of the 3 servers, stream, bucket, compaction point\n');
    return await load(o, logs, async () => {
      const s = (await jsm.streams.info(stream)).state;
      const b = (await jsm.streams.info(`OBJ_${bucket}`)).state;
      return {
        bytes: stores.reduce((n, d) => n + bytesUnder(d), 0),
        detail: `stream ${mib(s.bytes)} in ${s.messages} msgs (first seq ${s.first_seq}), bucket ${mib(b.bytes)}, `
          + `first index ${logs[0]!.status().firstIndex ?? '?'}`,
      };
    });
  } finally {
    for (const log of logs) await log.close().catch(() => undefined);
    await nc.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------- main

const o = benchOptions(usage, parseOptions);
const parent = mkdtempSync(join(o.dataParent, 'roster-soak-'));
let nats: NatsCluster | undefined;
const restoreLive = new RestoreLive();
const verdicts: string[] = [];
/** The version line of the nats-server binary the cluster mode runs. */
function natsServerVersion(): string {
  return execFileSync(natsServerBinary(), ['--version'], { encoding: 'utf8' }).trim();
}

const disk = o.modes.some((m) => m !== 'restore')
  ? `${o.writes} writes per disk mode over ${o.keys} keys, a snapshot every ${o.snapshotEvery} entries per node, ${o.inFlight} appends in flight, ` : '';
process.stdout.write(`roster soak bench: ${o.modes.join(', ')}; ${disk}at most ${o.seconds} s of load each, node ${process.version}, `
  + `${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}\n`);
const code = await runBench(async (run) => {
  for (const mode of o.modes) {
    if (mode === 'restore') {
      const r = await restoreSoak({ keys: o.restoreKeys, seconds: o.seconds, into: o.restoreInto }, parent, restoreLive);
      verdicts.push(...r.lines);
      for (const p of r.problems) run.fail(`restore: ${p}`);
      continue;
    }
    let samples: Sample[];
    if (mode === 'single') {
      samples = await single(o, parent);
    } else {
      // Compaction needs a nats-server that replays purges safely: Debian 13's unless ROSTER_NATS_SERVER names one.
      process.env.ROSTER_NATS_SERVER ||= debianNatsServer();
      process.stdout.write(`${natsServerVersion()}\n`);
      nats = await startNatsCluster();
      samples = await cluster(o, nats);
      await nats.shutdown();
      nats = undefined;
    }
    const v = verdict(samples);
    verdicts.push(`${mode}: ${v.text}`);
    if (!v.flat) run.fail(`${mode}: disk use was not shown flat`);
    if (run.interrupted()) return 130;
  }
  process.stdout.write(`\n${verdicts.join('\n')}\n`);
  return undefined;
}, async () => {
  await restoreLive.stopAll();
  await nats?.shutdown();
  rmSync(parent, { recursive: true, force: true });
});
process.exit(code);
