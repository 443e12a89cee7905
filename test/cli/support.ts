/**
 * Runs the `roster` command as a user does: `node bin/roster.mjs ...` in its own process, finding the
 * agent through ROSTER_HTTP_ADDR. Every wait is bounded; a process still running at its deadline is
 * ended here by its pid (the test started it, nobody else holds it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { client, repoRoot, startAgent, type Agent } from '../support/agent.ts';

export const rosterBin = join(repoRoot, 'bin/roster.mjs');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** The agent's base URL (set as ROSTER_HTTP_ADDR); absent: ROSTER_HTTP_ADDR is not set. */
  agent?: string;
  env?: Record<string, string | undefined>;
  input?: string | Buffer;
  /** @default 20000 */
  timeoutMs?: number;
  /**
   * The `node` that runs the command. `roster agent` runs the agent in the command's own process, so the
   * tests that start a serving one pass `agentNode` (the Node the test agents run on). @default process.execPath
   */
  node?: string;
}

export interface Running {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process exits (killed with SIGKILL at the deadline). */
  exited: Promise<RunResult>;
  /** Waits until stdout or stderr matches, bounded. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

export function startRoster(args: string[], o: RunOptions = {}): Running {
  // Consul's variables of the shell that runs the tests are none of the command's business.
  const consul = { CONSUL_HTTP_ADDR: undefined, CONSUL_HTTP_TOKEN: undefined, CONSUL_HTTP_TOKEN_FILE: undefined, CONSUL_HTTP_SSL: undefined };
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: undefined, ROSTER_HTTP_ADDR: o.agent, ROSTER_HTTP_TOKEN: undefined, ...consul, ...o.env };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const proc = spawn(o.node ?? process.execPath, [rosterBin, ...args], { cwd: repoRoot, env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  if (o.input !== undefined) proc.stdin!.end(o.input);
  else proc.stdin!.end();
  const deadline = setTimeout(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); }, o.timeoutMs ?? 20_000);
  const exited = new Promise<RunResult>((resolve) => {
    proc.once('close', (code, signal) => { clearTimeout(deadline); resolve({ code, signal, stdout, stderr }); });
  });
  const waitFor = async (pattern: RegExp, timeoutMs = 15_000) => {
    const until = Date.now() + timeoutMs;
    while (!pattern.test(stdout) && !pattern.test(stderr)) {
      if (Date.now() > until) throw new Error(`no ${pattern} within ${timeoutMs} ms:\nstdout: ${stdout}\nstderr: ${stderr}`);
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`exited (${proc.exitCode ?? proc.signalCode}) before ${pattern}:\nstdout: ${stdout}\nstderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { proc, stdout: () => stdout, stderr: () => stderr, exited, waitFor };
}

export function roster(args: string[], o: RunOptions = {}): Promise<RunResult> {
  return startRoster(args, o).exited;
}

/** Waits for a condition, bounded. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A loopback port nobody listens on (bound, then closed): connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as import('node:net').AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A started agent and a scratch directory for the commands' files; `agent`, `http` and `scratch` are set in beforeAll. */
export interface AgentAndScratch {
  agent: Agent;
  http: ReturnType<typeof client>;
  scratch: string;
  /** The path of `name` in the scratch directory. */
  file(name: string): string;
  /** The text of `name` in the scratch directory; '' when there is no such file. */
  read(name: string): string;
}

/**
 * Starts an agent and makes a scratch directory (named from `prefix`) before the enclosing suite's tests;
 * stops the agent and removes both after them.
 */
export function useAgentAndScratch(prefix: string): AgentAndScratch {
  const fx = {
    file: (name: string) => join(fx.scratch, name),
    read: (name: string) => (existsSync(fx.file(name)) ? readFileSync(fx.file(name), 'utf8') : ''),
  } as AgentAndScratch;
  beforeAll(async () => {
    fx.agent = await startAgent();
    fx.http = client(fx.agent);
    fx.scratch = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await fx.agent?.stop();
    fx.agent?.cleanup();
    if (fx.scratch) rmSync(fx.scratch, { recursive: true, force: true });
  });
  return fx;
}
