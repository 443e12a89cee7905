/**
 * The processes the platform tests run: the compiled agent and the `roster` command, each under a chosen
 * `node` executable and optionally another glibc (through that glibc's dynamic loader). The agent is
 * built once into a scratch directory the way `npm run build` does; every process is ended by its pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { buildServer } from '../deploy/build-server.ts';
import { repoRoot } from '../support/agent.ts';
import type { Libc } from '../support/node-dist.ts';

/** Builds the agent into `.scratch/platform-*`; returns the scratch directory (its `dist/server` is the build). */
export function buildIntoScratch(): string {
  mkdirSync(join(repoRoot, '.scratch'), { recursive: true });
  const scratch = mkdtempSync(join(repoRoot, '.scratch', 'platform-'));
  buildServer(join(scratch, 'dist/server'));
  return scratch;
}

/** `node args…`, or the same through `libc`'s loader so that the process runs against that glibc. */
export function command(node: string, args: string[], libc?: Libc): [string, string[]] {
  return libc === undefined ? [node, args] : [libc.loader, ['--library-path', libc.libraryPath, node, ...args]];
}

export interface Started {
  proc: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  /** SIGTERM by pid, SIGKILL after `graceMs`; resolves when it has ended. */
  end(graceMs?: number): Promise<void>;
}

export function start(cmd: [string, string[]], cwd: string): Started {
  const t0 = performance.now();
  // The agent sets the binding's head limit itself; one inherited from a test process that loaded it must not.
  const { UWS_HTTP_MAX_HEADERS_SIZE: _inherited, ...env } = process.env;
  const proc = spawn(cmd[0], cmd[1], { cwd, env: { ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((resolve) => {
    proc.once('close', (code, signal) => resolve({ code, signal, ms: performance.now() - t0 }));
  });
  const running = () => proc.exitCode === null && proc.signalCode === null;
  const end = async (graceMs = 15_000) => {
    if (proc.pid === undefined || !running()) { await exited; return; }
    process.kill(proc.pid, 'SIGTERM');
    const timer = setTimeout(() => { if (running()) process.kill(proc.pid!, 'SIGKILL'); }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { proc, output: () => out, exited, end };
}

const readyPattern = /roster listening http=(http:\/\/[^\s"]+) grpc=([^\s"]+)/;

/** Waits for the agent's ready line; its HTTP base URL and gRPC address. Ends the agent when it does not come. */
export async function ready(agent: Started, timeoutMs: number): Promise<{ url: string; grpc: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = readyPattern.exec(agent.output());
    if (m) return { url: m[1]!, grpc: m[2]! };
    if (agent.proc.exitCode !== null || agent.proc.signalCode !== null) throw new Error(`the agent exited before ready:\n${agent.output()}`);
    if (Date.now() > deadline) {
      await agent.end(1_000);
      throw new Error(`the agent was not ready in ${timeoutMs} ms:\n${agent.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs `node bin/roster.mjs args…` from the checkout against the agent at `url`, bounded. */
export function roster(node: string, url: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ROSTER_HTTP_ADDR: url, NO_COLOR: '1' };
  delete env.ROSTER_HTTP_TOKEN;
  const r = spawnSync(node, [join(repoRoot, 'bin/roster.mjs'), ...args], { cwd: repoRoot, env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
