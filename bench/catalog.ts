/**
 * Catalog scale bench: `npm run bench:catalog [-- options]`.
 *
 * Registers `--services` services, each with a TTL check, on one started agent (as a Consul agent holds
 * its node's services), through `--clients` keep-alive connections, and prints for each quarter of them
 * the registrations per second and the agent's CPU per registration (user+system from /proc): a cost per
 * registration that grows with the catalog is a registration that visits the whole catalog. Then, on the
 * full catalog: TTL passes one after another, health queries of one service name (`--services` / 100
 * instances each), and a restart's time to ready. It prints figures only; nothing is a target.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { startRoster, type Server } from './server.ts';
import { benchOptions, count, parseBenchArgs } from './support/options.ts';
import { runBench } from './support/run.ts';

const usage = `usage: npm run bench:catalog -- [--services N] [--clients N]
  --services N  services registered, each with a TTL check (default 20000, from 100 to 200000)
  --clients N   connections registering at once (default 16, from 1 to 256)`;

interface Options { services: number; clients: number }

function parse(argv: string[]): Options {
  const v = parseBenchArgs(argv, { services: { type: 'string' }, clients: { type: 'string' } });
  return { services: count('services', v.services, 20_000, 100, 200_000), clients: count('clients', v.clients, 16, 1, 256) };
}

const json = { 'content-type': 'application/json' };
const names = 100;

/** The process's user+system CPU in ms (clock ticks of 10 ms, from /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function put(url: string, body?: unknown): Promise<void> {
  const r = await fetch(url, { method: 'PUT', ...(body === undefined ? {} : { headers: json, body: JSON.stringify(body) }) });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`PUT ${url}: ${r.status}`);
}

/** Registers services `from` … `to - 1` over `clients` connections. */
async function register(server: Server, from: number, to: number, clients: number): Promise<void> {
  let next = from;
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let i = next++; i < to; i = next++) {
      await put(`${server.url}/v1/agent/service/register`, { Name: `web${i % names}`, ID: `s${i}`, Port: 80, Check: { TTL: '1h', Status: 'passing' } });
    }
  }));
}

const row = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(50)}${value}\n`);

async function main(): Promise<number> {
  const o = benchOptions(usage, parse);
  let server: Server | undefined;
  return runBench(async (run) => {
    server = await startRoster([], tmpdir(), { keepDataDir: true, readyTimeoutMs: 120_000, stopTimeoutMs: 60_000 });
    process.stdout.write(`roster catalog bench: ${o.services} services with a TTL check each, ${o.clients} clients, ${names} service names\n`);
    const quarter = Math.ceil(o.services / 4);
    for (let from = 0; from < o.services; from += quarter) {
      if (run.interrupted()) return 130;
      const to = Math.min(o.services, from + quarter);
      const [t0, c0] = [performance.now(), cpuMs(server.pid)];
      await register(server, from, to, o.clients);
      const [s, c] = [(performance.now() - t0) / 1000, cpuMs(server.pid) - c0];
      row(`register ${from + 1}–${to}`, `${Math.round((to - from) / s)}/s, ${Math.round((c / (to - from)) * 1000)} µs of agent CPU each`);
    }
    const passes = 2000;
    let [t0, c0] = [performance.now(), cpuMs(server.pid)];
    for (let i = 0; i < passes; i++) await put(`${server.url}/v1/agent/check/pass/service:s${(i * 7919) % o.services}`);
    row(`TTL pass, one at a time (${passes})`, `${Math.round(passes / ((performance.now() - t0) / 1000))}/s, ${Math.round(((cpuMs(server.pid) - c0) / passes) * 1000)} µs of agent CPU each`);
    const queries = 200;
    [t0, c0] = [performance.now(), cpuMs(server.pid)];
    for (let i = 0; i < queries; i++) await (await fetch(`${server.url}/v1/health/service/web${i % names}`)).arrayBuffer();
    row(`GET /v1/health/service/<name> (${o.services / names} instances)`, `${((performance.now() - t0) / queries).toFixed(2)} ms each, ${Math.round(((cpuMs(server.pid) - c0) / queries) * 1000)} µs of agent CPU`);
    const dataDir = server.dataDir;
    const stopped = await server.stop();
    if (stopped !== undefined) run.fail(stopped);
    server = await startRoster([], tmpdir(), { dataDir, readyTimeoutMs: 120_000, stopTimeoutMs: 60_000 });
    row('restart: SIGTERM, then start to ready', `${((server.readyAt - server.spawnedAt) / 1000).toFixed(1)} s`);
    const services = Object.keys(await (await fetch(`${server.url}/v1/agent/services`)).json() as object).length;
    if (services !== o.services) run.fail(`after the restart the agent holds ${services} services, not ${o.services}`);
  }, async (run) => {
    const failure = await server?.stop();
    if (failure !== undefined) run.fail(failure);
  });
}

process.exitCode = await main();
