/**
 * Churn soak of one agent's memory: `npm run bench:churn [-- options]`.
 *
 * Starts a real Roster process (bench/server.ts: the compiled agent, a fresh data dir, free ports) and,
 * for --seconds, repeats one round of everything an agent holds for a while and lets go of: a session
 * created, a lock on one of 100 keys taken and released with it, the session destroyed (every tenth left
 * to expire instead), a key written and deleted, a service registered with a TTL check that is passed and
 * then deregistered, a blocking query that waits out 50 ms, a read of a missing key, a transaction of ten
 * sets, a filtered health read; and in turn a stream subscription read to its end of snapshot and
 * closed, or a gRPC Watch opened and cancelled. Three checks probe the agent itself each second all along
 * (HTTP, TCP and gRPC), so their probes churn too. Each --sample seconds it prints the agent's resident memory
 * (/proc/<pid>/status), its heap in use, open descriptors and state size (its metrics).
 *
 * It ends with a verdict on the resident memory: flat when the largest reading of the second half of the
 * run is at most the largest of the first half plus 10%, GROWING otherwise (exit 1). At about 70 rounds a
 * second here, a leak of a kilobyte a round fails it in the default 600 s; smaller ones need longer runs. The readings go to
 * --json as well (default bench/results/churn-<time>.json).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import WebSocket from 'ws';
import { startRoster, type Server } from './server.ts';
import { benchOptions, parseBenchArgs, resultsPath, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

const usage = `usage: npm run bench:churn -- [--seconds S] [--sample S] [--json path]
  --seconds S   how long the churn runs (default 600, at most 86400)
  --sample S    seconds between memory readings (default 30, from 1 to 600)
  --json path   where the readings go (default bench/results/churn-<time>.json)`;

interface Options { seconds: number; sampleS: number; json: string }

function parse(argv: string[]): Options {
  const v = parseBenchArgs(argv, { seconds: { type: 'string' }, sample: { type: 'string' }, json: { type: 'string' } });
  return {
    seconds: seconds('seconds', v.seconds, 600, { max: 86_400 }),
    sampleS: seconds('sample', v.sample, 30, { min: 1, minIncluded: true, max: 600 }),
    json: resultsPath(v.json, 'churn'),
  };
}

interface Sample { atS: number; rounds: number; rssMiB: number; heapMiB: number; fds: number; stateBytes: number }

const json = { 'content-type': 'application/json' };
const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

/** The agent's resident memory from /proc, and its heap in use, descriptors and state size from its metrics. */
async function sample(server: Server, atS: number, rounds: number): Promise<Sample> {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  const text = await (await fetch(`${server.url}/v1/agent/metrics?format=prometheus`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return {
    atS, rounds, rssMiB: mib(rssKiB * 1024), heapMiB: mib(metric('nodejs_heap_size_used_bytes')),
    fds: metric('process_open_fds'), stateBytes: metric('roster_state_bytes'),
  };
}

/** A stream subscription read to its end of snapshot, then closed (3 s at most). */
function streamOnce(server: Server, topic: string, key: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/v1/stream`, 'registry.stream.v1');
    const done = () => { clearTimeout(timer); socket.terminate(); resolve(); };
    const timer = setTimeout(done, 3000);
    socket.on('open', () => socket.send(JSON.stringify({ op: 'subscribe', id: 's', topic, key })));
    socket.on('message', (data: Buffer) => { if (data.toString().includes('"end_of_snapshot"')) done(); });
    socket.on('error', done);
  });
}

type HealthClient = grpc.Client & { watch(req: { service: string }): grpc.ClientReadableStream<unknown> };

/** A gRPC Watch opened and cancelled after its first message (500 ms at most). */
function watchOnce(health: HealthClient, name: string): Promise<void> {
  return new Promise((resolve) => {
    const call = health.watch({ service: name });
    const timer = setTimeout(() => call.cancel(), 500);
    call.on('data', () => call.cancel());
    call.on('error', () => { clearTimeout(timer); resolve(); });
    call.on('end', () => { clearTimeout(timer); resolve(); });
  });
}

/** One round of churn; every request must be answered below 500. */
async function round(server: Server, health: HealthClient, i: number): Promise<void> {
  const call = async (method: string, path: string, body?: string, headers?: Record<string, string>): Promise<string> => {
    const r = await fetch(server.url + path, { method, body, headers });
    const text = await r.text();
    if (r.status >= 500) throw new Error(`${method} ${path} answered ${r.status}: ${text}`);
    return text;
  };
  const sid = (JSON.parse(await call('PUT', '/v1/session/create', JSON.stringify({ TTL: '10s', Name: `churn-${i}` }), json)) as { ID: string }).ID;
  await call('PUT', `/v1/kv/churn/${i % 100}?acquire=${sid}`, `v${i}`);
  await call('PUT', `/v1/kv/churn/${i % 100}?release=${sid}`);
  if (i % 10 !== 0) await call('PUT', `/v1/session/destroy/${sid}`);
  await call('PUT', `/v1/kv/tmp/${i}`, 'x'.repeat(i % 500));
  await call('DELETE', `/v1/kv/tmp/${i}`);
  await call('PUT', '/v1/agent/service/register', JSON.stringify({ Name: `svc${i % 50}`, ID: `svc-${i}`, Check: { CheckID: `chk-${i}`, TTL: '30s' } }), json);
  await call('PUT', `/v1/agent/check/pass/chk-${i}`);
  await call('PUT', `/v1/agent/service/deregister/svc-${i}`);
  await call('GET', `/v1/kv/churn/${i % 100}?index=1&wait=50ms`);
  await call('GET', `/v1/kv/missing/${i}`);
  const sets = Array.from({ length: 10 }, (_, k) => ({ KV: { Verb: 'set', Key: `txn/${k}`, Value: 'eA==' } }));
  await call('PUT', '/v1/txn', JSON.stringify(sets), json);
  await call('GET', `/v1/health/service/svc${i % 50}?filter=${encodeURIComponent('Service.ID matches "svc-.*"')}`);
  if (i % 3 === 0) await streamOnce(server, 'kv_prefix', 'churn/');
  else if (i % 3 === 1) await streamOnce(server, 'service_health', `svc${i % 50}`);
  else await watchOnce(health, `svc${i % 50}`);
}

/** HTTP, TCP and gRPC checks of the agent itself, probed every second for the whole run. */
async function registerProbes(server: Server): Promise<void> {
  const host = new URL(server.url).host;
  const checks = [
    { CheckID: 'probe-http', Name: 'probe http', HTTP: `${server.url}/v1/status/leader`, Interval: '1s' },
    { CheckID: 'probe-tcp', Name: 'probe tcp', TCP: host, Interval: '1s' },
    { CheckID: 'probe-grpc', Name: 'probe grpc', GRPC: server.grpc, Interval: '1s' },
  ];
  for (const check of checks) {
    const r = await fetch(`${server.url}/v1/agent/check/register`, { method: 'PUT', body: JSON.stringify(check), headers: json });
    if (r.status !== 200) throw new Error(`registering ${check.CheckID} answered ${r.status}: ${await r.text()}`);
  }
}

/** Flat when the second half's largest resident memory is at most the first half's plus 10%. */
function churnVerdict(samples: Sample[]): { flat: boolean; text: string } {
  const half = Math.ceil(samples.length / 2);
  const first = Math.max(...samples.slice(0, half).map((s) => s.rssMiB));
  const second = Math.max(...samples.slice(half).map((s) => s.rssMiB));
  const flat = samples.length >= 4 && second <= first * 1.1;
  const word = samples.length < 4 ? 'NOT SHOWN (fewer than 4 readings: raise --seconds or lower --sample)' : flat ? 'flat' : 'GROWING';
  return { flat, text: `resident memory: peak ${first} MiB in the first half, ${second} MiB in the second: ${word}` };
}

async function main(): Promise<number> {
  const o = benchOptions(usage, parse);
  let server: Server | undefined;
  let health: HealthClient | undefined;
  return runBench(async (run) => {
    server = await startRoster([], tmpdir());
    const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
    health = new Health(server.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
    await registerProbes(server);
    process.stdout.write(`roster churn bench: ${o.seconds} s, a reading every ${o.sampleS} s\n`);
    const startMs = Date.now();
    const endMs = startMs + o.seconds * 1000;
    const samples: Sample[] = [await sample(server, 0, 0)];
    let nextSampleMs = startMs + o.sampleS * 1000;
    let rounds = 0;
    while (Date.now() < endMs) {
      if (run.interrupted()) return 130;
      await round(server, health, ++rounds);
      if (Date.now() >= nextSampleMs) {
        const s = await sample(server, Math.round((Date.now() - startMs) / 1000), rounds);
        samples.push(s);
        process.stdout.write(`${String(s.atS).padStart(6)} s  ${String(s.rounds).padStart(8)} rounds  RSS ${s.rssMiB} MiB  heap ${s.heapMiB} MiB  fds ${s.fds}  state ${s.stateBytes} B\n`);
        nextSampleMs += o.sampleS * 1000;
      }
    }
    const v = churnVerdict(samples);
    process.stdout.write(`${rounds} rounds in ${o.seconds} s; ${v.text}\n`);
    mkdirSync(dirname(o.json), { recursive: true });
    writeFileSync(o.json, JSON.stringify({ seconds: o.seconds, rounds, samples, verdict: v }, null, 2));
    process.stdout.write(`readings written to ${o.json}\n`);
    if (!v.flat) run.fail('resident memory was not shown flat');
  }, async (run) => {
    health?.close();
    const failure = await server?.stop();
    if (failure !== undefined) run.fail(failure);
  });
}

process.exitCode = await main();
