/**
 * `npm run cluster`: a local three-node cluster on loopback — three nats-server processes with
 * JetStream and cluster routes, and three Roster nodes on their own ports joined by gossip. Prints one
 * line per node `node <name> http=<url> grpc=<host:port>` once all are ready; Ctrl-C or SIGTERM stops
 * everything it started (by pid) and removes the temporary data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startNatsCluster } from './nats-launcher.ts';

const { values } = parseArgs({
  options: { 'http-port-base': { type: 'string', default: '8500' }, dialect: { type: 'string', default: 'seed' } },
});
const base = Number(values['http-port-base']);
const repoRoot = resolve(import.meta.dirname, '../..');
const readyPattern = /roster listening http=(http:\/\/[^\s"]+) grpc=([^\s"]+)/;

interface NodeProcess { name: string; proc: ChildProcess; ready: Promise<string> }

function startNode(k: number, nats: string[], dataRoot: string): NodeProcess {
  const name = `node${k}`;
  const port = (offset: number) => String(base + (k - 1) * 10 + offset);
  const seeds = [1, 2, 3].map((j) => `127.0.0.1:${base + (j - 1) * 10 + 1}`);
  const args = ['--import', 'tsx', join(repoRoot, 'src/main.ts'), '--node-name', name, '--data-dir', join(dataRoot, name),
    '--http-port', port(0), '--grpc-port', port(2), '--gossip-listen', `127.0.0.1:${port(1)}`, '--nats', nats.join(','),
    '--dialect', values.dialect!, ...seeds.flatMap((j) => ['--join', j])];
  const proc = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise<string>((res, rej) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = readyPattern.exec(out);
      if (m) res(`node ${name} http=${m[1]} grpc=${m[2]}`);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => { process.stderr.write(`[${name}] ${d}`); });
    proc.once('exit', (code) => rej(new Error(`${name} exited (${code}) before it was ready:\n${out.slice(-2000)}`)));
  });
  return { name, proc, ready };
}

async function main(): Promise<void> {
  const dataRoot = mkdtempSync(join(tmpdir(), 'roster-cluster-'));
  const nats = await startNatsCluster();
  const nodes = [1, 2, 3].map((k) => startNode(k, nats.urls, dataRoot));
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const n of nodes) if (n.proc.exitCode === null) n.proc.kill('SIGTERM');
    await Promise.all(nodes.map((n) => (n.proc.exitCode === null ? new Promise((r) => n.proc.once('exit', r)) : undefined)));
    await nats.shutdown();
    rmSync(dataRoot, { recursive: true, force: true });
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  // `npm run cluster` sits behind npm and a shell, which do not pass SIGTERM on: when the process that
  // started this one goes away, stop everything too rather than leave servers behind.
  const parent = process.ppid;
  setInterval(() => { if (process.ppid !== parent) void stop(0); }, 500).unref();
  try {
    for (const line of await Promise.all(nodes.map((n) => n.ready))) process.stdout.write(`${line}\n`);
    process.stdout.write(`nats ${nats.urls.join(' ')}\n`);
  } catch (err) {
    process.stderr.write(`cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    await stop(1);
  }
}

void main();
