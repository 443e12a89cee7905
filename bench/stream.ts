/**
 * Watch fan-out bench: `npm run bench:stream [-- options]`.
 *
 * Starts a real Roster process (the compiled agent, bench/support/built-agent.ts, fresh data dir, free ports), registers one
 * service instance `bench-web` with a TTL check, then opens
 *   --subscribers WebSocket connections to /v1/stream (subprotocol registry.stream.v1), each subscribed to
 *                 service_health `bench-web`, and
 *   --subscribers gRPC grpc.health.v1 Watch calls on `bench-web` through grpc-health-check's client, on the
 *                 started Roster's gRPC port (`--grpc-port 0`, read from `grpc=<addr>` on its `roster listening`
 *                 line; --no-grpc skips them),
 * and makes --changes changes paced evenly over --duration seconds: the TTL check alternates fail / pass, so
 * every change is one service_health event per WebSocket subscriber and one status flip
 * (NOT_SERVING / SERVING) per Watch call. Change k is matched to the k-th message each subscriber gets
 * after its snapshot (checked against the status change k set; a mismatch is counted as an error).
 *
 * Latency (p50/p99) = message receipt in this process minus the moment the change's HTTP answer arrived
 * (the write was acknowledged); a message can arrive before the answer — the stream sends events as the
 * entry is applied, before the HTTP reply is written — which counts as 0 ms and is reported in "early".
 * "sent p50/p99" is measured from the moment the change was sent instead. deliveries/s = messages received / (last receipt - first change sent). The bench clients share
 * the machine (and one event loop) with nothing but themselves, and the server shares the CPUs with them:
 * with 1,000+ subscribers the client side is a large part of what is measured.
 */
import { cpus, tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { formatRow, ms, percentile, startRoster, stopAndReport, type Server } from './server.ts';
import { benchOptions, count, parseBenchArgs, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

const subprotocol = 'registry.stream.v1';
const serviceName = 'bench-web';
const serviceId = 'bench-web-1';
const checkId = `service:${serviceId}`;
/** Bounds: the bench always ends. */
const subscribersMax = 10_000;
const changesMax = 10_000;
/** Opening and subscribing every subscriber must finish within this. */
const setupTimeoutMs = 60_000;
/** After the last change, how long the bench waits for the stragglers. */
const settleTimeoutMs = 10_000;
/** Connections opened at once. */
const openConcurrency = 100;
const requestTimeoutMs = 10_000;

// ---------------------------------------------------------------- options

interface Options {
  durationS: number;
  subscribers: number;
  changes: number;
  grpc: boolean;
  dataParent: string;
}

const usage = `usage: npm run bench:stream -- [options]
  --duration <seconds>   time over which the changes are paced                 [default 10]
  --subscribers <n>      WebSocket subscribers, and as many gRPC Watch calls  [default 1000]
  --changes <n>          changes made (TTL check fail/pass alternately)       [default 200]
  --no-grpc              skip the gRPC Watch calls
  --data-parent <dir>    where the started Roster's temporary data dir is made [default: os.tmpdir()]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    duration: { type: 'string' }, subscribers: { type: 'string' }, changes: { type: 'string' },
    'no-grpc': { type: 'boolean' }, 'data-parent': { type: 'string' },
  });
  return {
    durationS: seconds('duration', values.duration, 10, { max: 3600 }),
    subscribers: count('subscribers', values.subscribers, 1000, 1, subscribersMax),
    changes: count('changes', values.changes, 200, 1, changesMax),
    grpc: values['no-grpc'] !== true,
    dataParent: values['data-parent'] ?? tmpdir(),
  };
}

// ---------------------------------------------------------------- HTTP

class Http {
  readonly pool: Pool;
  constructor(base: string) {
    this.pool = new Pool(base, { connections: 4, headersTimeout: requestTimeoutMs, bodyTimeout: requestTimeoutMs, connectTimeout: requestTimeoutMs });
  }
  async put(path: string, body?: unknown): Promise<void> {
    const res = await this.pool.request({ method: 'PUT', path, ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`PUT ${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
  }
  close(): Promise<void> {
    return this.pool.close();
  }
}

// ---------------------------------------------------------------- subscribers

/** What a subscriber saw after its snapshot: the receipt time and status of each message, in order. */
interface Tally {
  at: number[];
  /** 'critical' / 'passing' (WebSocket) or 'NOT_SERVING' / 'SERVING' (gRPC). */
  status: string[];
  failed: string | undefined;
}

const newTally = (): Tally => ({ at: [], status: [], failed: undefined });

interface Subscribers {
  tallies: Tally[];
  close(): void;
}

/** Runs `open` for 0..n-1, at most `openConcurrency` at a time. */
async function inBatches(n: number, open: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(openConcurrency, n) }, async () => {
    while (next < n) await open(next++);
  }));
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error(`${what}: not done within ${ms / 1000} s`)), ms); }),
  ]);
}

async function openWebSockets(url: string, n: number): Promise<Subscribers> {
  const wsUrl = `ws://127.0.0.1:${new URL(url).port}/v1/stream`;
  const sockets: WebSocket[] = [];
  const tallies = Array.from({ length: n }, newTally);
  const close = () => { for (const ws of sockets) ws.terminate(); };
  try {
    await withTimeout(inBatches(n, (i) => new Promise<void>((res, rej) => {
      const ws = new WebSocket(wsUrl, [subprotocol]);
      sockets.push(ws);
      const t = tallies[i]!;
      let live = false;
      ws.on('message', (data) => {
        const now = performance.now();
        const m = JSON.parse(data.toString()) as { type: string; value?: { Checks?: { CheckID: string; Status: string }[] }; code?: string };
        if (m.type === 'end_of_snapshot') { live = true; res(); return; }
        if (m.type === 'error') { t.failed ??= `error ${m.code}`; rej(new Error(`subscribe refused: ${data.toString()}`)); return; }
        if (!live || m.type === 'bookmark') return;
        if (m.type !== 'event') { t.failed ??= `unexpected ${m.type}`; return; }
        t.at.push(now);
        t.status.push(m.value?.Checks?.find((c) => c.CheckID === checkId)?.Status ?? 'absent');
      });
      ws.once('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 's', topic: 'service_health', key: serviceName })));
      ws.once('error', (err) => { t.failed ??= err.message; rej(err); });
      ws.once('close', (code, reason) => { if (!live) rej(new Error(`closed ${code} ${reason.toString()} before the snapshot ended`)); else t.failed ??= `closed ${code} ${reason.toString()}`; });
    })), setupTimeoutMs, `opening ${n} WebSocket subscribers`);
  } catch (err) {
    close();
    throw err;
  }
  return { tallies, close };
}

type HealthClient = grpc.Client & { watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }> };
const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
/** Watch calls per channel (one HTTP/2 connection each). */
const watchesPerChannel = 100;

async function openWatches(address: string, n: number): Promise<Subscribers> {
  const clients: HealthClient[] = [];
  const calls: grpc.ClientReadableStream<{ status: string }>[] = [];
  const tallies = Array.from({ length: n }, newTally);
  let closing = false;
  const close = () => {
    closing = true;
    for (const call of calls) call.cancel();
    for (const c of clients) c.close();
  };
  for (let i = 0; i < Math.ceil(n / watchesPerChannel); i++) {
    // A distinct option per client keeps each on its own connection instead of one shared subchannel.
    clients.push(new Health(address, grpc.credentials.createInsecure(), { 'bench.channel': i }) as unknown as HealthClient);
  }
  try {
    await withTimeout(inBatches(n, (i) => new Promise<void>((res, rej) => {
      const call = clients[Math.floor(i / watchesPerChannel)]!.watch({ service: serviceName });
      calls.push(call);
      const t = tallies[i]!;
      let first = true;
      call.on('data', (m: { status: string }) => {
        const now = performance.now();
        if (first) { first = false; res(); return; } // the current status, before any change
        t.at.push(now);
        t.status.push(m.status);
      });
      call.on('error', (err: grpc.ServiceError) => {
        if (closing && err.code === grpc.status.CANCELLED) return;
        t.failed ??= `${grpc.status[err.code]} ${err.details}`;
        rej(err);
      });
    })), setupTimeoutMs, `opening ${n} gRPC Watch calls`);
  } catch (err) {
    close();
    throw err;
  }
  return { tallies, close };
}

// ---------------------------------------------------------------- changes and results

interface Change {
  sentAt: number;
  ackAt: number;
  /** The k-th change sets the check critical when k is even, passing when odd. */
  critical: boolean;
}

async function makeChanges(http: Http, o: Options, stopped: () => boolean): Promise<Change[]> {
  const gapMs = (o.durationS * 1000) / o.changes;
  const start = performance.now();
  const out: Change[] = [];
  for (let k = 0; k < o.changes && !stopped(); k++) {
    const due = start + k * gapMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const critical = k % 2 === 0;
    const sentAt = performance.now();
    await http.put(`/v1/agent/check/${critical ? 'fail' : 'pass'}/${encodeURIComponent(checkId)}?note=change-${k}`);
    out.push({ sentAt, ackAt: performance.now(), critical });
  }
  return out;
}

/** Waits until every subscriber has one message per change, or the settle bound passes. */
async function settle(groups: Subscribers[], changes: number): Promise<void> {
  const deadline = performance.now() + settleTimeoutMs;
  const done = () => groups.every((g) => g.tallies.every((t) => t.at.length >= changes || t.failed !== undefined));
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

interface Row {
  transport: string;
  subscribers: number;
  delivered: number;
  missing: number;
  wrong: number;
  early: number;
  perS: number;
  /** From the change's HTTP answer (0 when the message came first). */
  p50: number;
  p99: number;
  /** From the moment the change was sent. */
  sentP50: number;
  sentP99: number;
  failed: number;
  firstFailure: string | undefined;
}

function summarize(transport: string, subs: Subscribers, changes: Change[], statusOf: (c: Change) => string): Row {
  const samples: number[] = [];
  const fromSent: number[] = [];
  let delivered = 0;
  let wrong = 0;
  let early = 0;
  let last = 0;
  for (const t of subs.tallies) {
    delivered += t.at.length;
    for (let k = 0; k < Math.min(t.at.length, changes.length); k++) {
      if (t.status[k] !== statusOf(changes[k]!)) { wrong++; continue; }
      const latency = t.at[k]! - changes[k]!.ackAt;
      if (latency < 0) early++;
      samples.push(Math.max(0, latency));
      fromSent.push(t.at[k]! - changes[k]!.sentAt);
      last = Math.max(last, t.at[k]!);
    }
  }
  const sorted = Float64Array.from(samples).sort();
  const sortedSent = Float64Array.from(fromSent).sort();
  const spanS = changes.length > 0 ? (last - changes[0]!.sentAt) / 1000 : 0;
  const failed = subs.tallies.filter((t) => t.failed !== undefined);
  return {
    transport, subscribers: subs.tallies.length, delivered,
    missing: subs.tallies.length * changes.length - Math.min(delivered, subs.tallies.length * changes.length),
    wrong, early, perS: spanS > 0 ? delivered / spanS : Number.NaN,
    p50: percentile(sorted, 50), p99: percentile(sorted, 99), sentP50: percentile(sortedSent, 50), sentP99: percentile(sortedSent, 99),
    failed: failed.length, firstFailure: failed[0]?.failed,
  };
}

const cols = ['transport', 'subscribers', 'delivered', 'missing', 'wrong', 'deliveries/s', 'p50 ms', 'p99 ms', 'early', 'sent p50', 'sent p99'] as const;
const widths = [10, 11, 10, 8, 6, 13, 8, 8, 8, 9, 9];

function rowText(r: Row): string {
  return formatRow([r.transport, String(r.subscribers), String(r.delivered), String(r.missing), String(r.wrong),
    Number.isNaN(r.perS) ? '-' : r.perS.toFixed(0), ms(r.p50), ms(r.p99), String(r.early), ms(r.sentP50), ms(r.sentP99)], widths);
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  let server: Server | undefined;
  let http: Http | undefined;
  const groups: Subscribers[] = [];
  return runBench(async (run) => {
    server = await startRoster([], o.dataParent);
    http = new Http(server.url);
    await http.put('/v1/agent/service/register', { Name: serviceName, ID: serviceId, Port: 8080, Check: { TTL: '1h', Status: 'passing' } });
    const cpu = cpus();
    process.stdout.write([
      `roster stream bench  server ${server.url} grpc ${server.grpc}  node ${process.version}  cpu ${cpu[0]?.model.trim() ?? 'unknown'} x${cpu.length}`,
      `${o.subscribers} subscribers per transport: WebSocket service_health "${serviceName}", gRPC Watch "${serviceName}"; ${o.changes} changes (TTL check fail/pass) paced over ${o.durationS} s`,
      'p50/p99 = receipt here - HTTP answer of the change (early = messages received before that answer, counted as 0 ms);',
      'sent p50/p99 = receipt - the change was sent; deliveries/s = messages / (last receipt - first change sent); bench and server share the machine',
      '',
    ].join('\n'));

    const t0 = performance.now();
    const ws = await openWebSockets(server.url, o.subscribers);
    groups.push(ws);
    let watches: Subscribers | undefined;
    if (o.grpc) {
      watches = await openWatches(server.grpc, o.subscribers);
      groups.push(watches);
    }
    process.stdout.write(`subscribed in ${((performance.now() - t0) / 1000).toFixed(1)} s\n\n`);
    if (run.interrupted()) return 130;

    const changes = await makeChanges(http, o, () => run.interrupted() || server?.exited() !== undefined);
    await settle(groups, changes.length);
    if (run.interrupted()) return 130;
    const gone = server.exited();
    if (gone !== undefined) throw new Error(`Roster stopped during the run (${gone}):\n${server.tail()}`);

    const rows = [summarize('websocket', ws, changes, (c) => (c.critical ? 'critical' : 'passing'))];
    if (watches !== undefined) rows.push(summarize('grpc', watches, changes, (c) => (c.critical ? 'NOT_SERVING' : 'SERVING')));
    process.stdout.write(`${formatRow(cols, widths)}\n`);
    for (const r of rows) {
      process.stdout.write(`${rowText(r)}\n`);
      if (r.missing > 0 || r.wrong > 0 || r.failed > 0) {
        run.fail(`${r.transport}: ${r.missing} missing, ${r.wrong} out of order or wrong, ${r.failed} subscribers failed${r.firstFailure !== undefined ? ` (first: ${r.firstFailure})` : ''}`);
      }
    }
    if (!o.grpc) process.stdout.write('gRPC: skipped (--no-grpc)\n');
  }, async (run) => {
    for (const g of groups) g.close();
    if (http !== undefined) await http.close().catch(() => {});
    if (!(await stopAndReport(server))) run.fail();
  });
}

process.exitCode = await main();
