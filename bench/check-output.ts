/**
 * Check output bench: `npm run bench:check-output [-- options]`.
 *
 * `--checks` HTTP checks probed every second, against a server in this process whose every answer differs
 * (`probe <n>`): the case of a check whose output carries a counter or a timestamp while its status holds.
 * For each check_update_interval given (`0s` writes every output change; `5m` is the default) one agent is
 * started, the checks registered and left to settle for `--settle` seconds, and then, over `--seconds`, it
 * prints the log entries the checks wrote per second (the catalog index's growth) and the agent's CPU
 * (user+system from /proc, as a share of one core), and the ratio of the first interval's figures to each
 * other's. It prints figures only; nothing is a target.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRoster, type Server } from './server.ts';
import { benchOptions, count, parseBenchArgs, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

const usage = `usage: npm run bench:check-output -- [--checks N] [--seconds S] [--settle S] [--intervals 0s,5m]
  --checks N      HTTP checks, each probed every second (default 1000, from 10 to 5000)
  --seconds S     measured span for each interval (default 30, from 5 to 600)
  --settle S      wait after registering, before measuring (default 10, from 2 to 600)
  --intervals L   check_update_interval values, one agent each (default 0s,5m)`;

interface Options { checks: number; seconds: number; settle: number; intervals: string[] }

function parse(argv: string[]): Options {
  const v = parseBenchArgs(argv, { checks: { type: 'string' }, seconds: { type: 'string' }, settle: { type: 'string' }, intervals: { type: 'string' } });
  const intervals = (v.intervals ?? '0s,5m').split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (intervals.length === 0) throw new Error('--intervals: give at least one duration, such as 0s,5m');
  return {
    checks: count('checks', v.checks, 1000, 10, 5000), seconds: seconds('seconds', v.seconds, 30, { min: 5, minIncluded: true, max: 600 }),
    settle: seconds('settle', v.settle, 10, { min: 2, minIncluded: true, max: 600 }), intervals,
  };
}

/** The process's user+system CPU in ms (clock ticks of 10 ms, from /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function catalogIndex(server: Server): Promise<number> {
  const r = await fetch(`${server.url}/v1/health/state/any`);
  await r.arrayBuffer();
  return Number(r.headers.get('x-consul-index'));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const row = (label: string, value: string) => process.stdout.write(`  ${label.padEnd(44)}${value}\n`);

async function main(): Promise<number> {
  const o = benchOptions(usage, parse);
  let probes = 0;
  const target = createServer((_req, res) => res.end(`probe ${++probes}`));
  await new Promise<void>((done) => target.listen(0, '127.0.0.1', done));
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
  const dir = mkdtempSync(join(tmpdir(), 'roster-check-output-'));
  let server: Server | undefined;
  return runBench(async (run) => {
    process.stdout.write(`roster check output bench: ${o.checks} HTTP checks every 1s whose output changes at each probe, ${o.settle}s to settle, ${o.seconds}s measured\n`);
    const figures: Array<{ interval: string; entries: number; cpu: number }> = [];
    for (const interval of o.intervals) {
      const file = join(dir, `agent-${figures.length}.json`);
      writeFileSync(file, JSON.stringify({ check_update_interval: interval }));
      server = await startRoster(['--config-file', file], tmpdir(), { readyTimeoutMs: 60_000 });
      for (let i = 0; i < o.checks; i++) {
        if (run.interrupted()) return 130;
        const r = await fetch(`${server.url}/v1/agent/check/register`, {
          method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ID: `c${i}`, Name: `c${i}`, HTTP: targetUrl, Interval: '1s' }),
        });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`check register: ${r.status}`);
      }
      await sleep(o.settle * 1000);
      const [i0, c0, p0] = [await catalogIndex(server), cpuMs(server.pid), probes];
      await sleep(o.seconds * 1000);
      const [i1, c1, p1] = [await catalogIndex(server), cpuMs(server.pid), probes];
      const entries = (i1 - i0) / o.seconds;
      const cpu = (c1 - c0) / (o.seconds * 1000);
      figures.push({ interval, entries, cpu });
      row(`check_update_interval ${interval}`, `${entries.toFixed(1)} entries/s, ${(cpu * 100).toFixed(1)}% of a core, ${Math.round((p1 - p0) / o.seconds)} probes/s`);
      const failure = await server.stop();
      server = undefined;
      if (failure !== undefined) run.fail(failure);
    }
    const [first, ...others] = figures;
    for (const f of others) {
      const entries = f.entries > 0 ? `${(first!.entries / f.entries).toFixed(1)}× the entries` : `${first!.entries.toFixed(1)} entries/s against none`;
      row(`${first!.interval} / ${f.interval}`, `${entries}, ${(first!.cpu / Math.max(f.cpu, 0.001)).toFixed(1)}× the CPU`);
    }
  }, async (run) => {
    const failure = await server?.stop();
    if (failure !== undefined) run.fail(failure);
    await new Promise<void>((done) => target.close(() => done()));
    rmSync(dir, { recursive: true, force: true });
  });
}

process.exitCode = await main();
