/**
 * Starts a real Roster process the way users do (node + tsx on src/main.ts) on a free port with its
 * own data dir, and talks to it over HTTP. Every test that claims a feature goes through this.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll } from 'vitest';

export const repoRoot = resolve(import.meta.dirname, '../..');
/** tsx's loader by absolute URL, so a process started in another working directory still finds it. */
export const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
/**
 * The `node` executable that runs the agents tests start: `ROSTER_TEST_AGENT_NODE` when set, else the one
 * running the tests. The Node matrix (`npm run test:lts`) runs the tests on Node 22/24, whose builds of the
 * uWebSockets.js binding this host's glibc cannot load, and points this at Node 20 so their agents still start.
 */
export const agentNode = process.env.ROSTER_TEST_AGENT_NODE || process.execPath;

export interface AgentOptions {
  /** Reuse a data dir (restart tests); a fresh temporary one by default. */
  dataDir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** @default 20000 */
  readyTimeoutMs?: number;
  /** Pass only `args` (no port, data dir or node name of the harness's own): tests of the defaults. */
  bare?: boolean;
  /** Working directory of the process. @default the repository root */
  cwd?: string;
  /**
   * A command the agent's command line is handed to (its own arguments first), which must exec it in the
   * same process, e.g. `['sh', '-c', 'ulimit -n 150 && exec "$0" "$@"']` for a lower descriptor limit.
   */
  wrap?: string[];
}

export interface Agent {
  url: string;
  /** host:port of the gRPC health service. */
  grpc: string;
  dataDir: string;
  proc: ChildProcess;
  output(): string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill9(): Promise<void>;
  /** Removes the data dir (only when the harness created it). */
  cleanup(): void;
}

/**
 * One agent for the enclosing suite (file or describe): started before its tests, handed to `started`,
 * stopped and its data dir removed after them (also when `started` throws).
 */
export function withAgent(started: (agent: Agent) => void | Promise<void>, o: AgentOptions = {}): void {
  forSuite(() => startAgent(o), started);
}

/** Starts one agent (of either harness) before the enclosing suite's tests, stops and cleans it up after them. */
export function forSuite<A extends { stop(): Promise<unknown>; cleanup(): void }>(start: () => Promise<A>, started: (agent: A) => void | Promise<void>): void {
  let agent: A | undefined;
  beforeAll(async () => {
    agent = await start();
    await started(agent);
  });
  afterAll(async () => {
    await agent?.stop();
    agent?.cleanup();
  });
}

const readyPattern = /roster listening http=(https?:\/\/[^\s"]+) grpc=([^\s"]+)/;

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'roster-test-'));
}

export async function startAgent(o: AgentOptions = {}): Promise<Agent> {
  const ownsDir = o.dataDir === undefined;
  const dataDir = o.dataDir ?? tempDataDir();
  const own = o.bare ? [] : ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', 'node1'];
  const args = ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), ...own, ...(o.args ?? [])];
  const [command, ...commandArgs] = o.wrap === undefined ? [agentNode, ...args] : [...o.wrap, agentNode, ...args];
  const proc = spawn(command!, commandArgs, { cwd: o.cwd ?? repoRoot, env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));

  const [url, grpc] = await new Promise<[string, string]>((res, rej) => {
    // An agent not ready in time is ended here: nobody else holds its pid.
    const timer = setTimeout(() => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      rej(new Error(`agent not ready in time:\n${out}`));
    }, o.readyTimeoutMs ?? 20_000);
    const onData = () => {
      const m = readyPattern.exec(out);
      if (m) { clearTimeout(timer); res([m[1]!, m[2]!]); }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then((code) => { clearTimeout(timer); rej(new Error(`agent exited (${code}) before ready:\n${out}`)); });
  });

  return {
    url, grpc, dataDir, proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
    kill9: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    cleanup: () => { if (ownsDir) rmSync(dataDir, { recursive: true, force: true }); },
  };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  body: Buffer;
  json<T = any>(): T;
}

/**
 * One HTTP call. `body` as a string or Buffer is sent as is; anything else as JSON. `signal` aborts it
 * (e.g. `AbortSignal.timeout(ms)`: the call then rejects); without one it waits as long as the agent takes.
 */
export async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {},
  signal?: AbortSignal): Promise<HttpResult> {
  let payload: string | Buffer | undefined;
  if (body === undefined) payload = undefined;
  else if (typeof body === 'string' || Buffer.isBuffer(body)) payload = body;
  else { payload = JSON.stringify(body); headers = { 'content-type': 'application/json', ...headers }; }
  const res = await fetch(base + path, { method, body: payload, headers, signal });
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  return { status: res.status, headers: res.headers, text, body: buf, json: () => JSON.parse(text) };
}

/** A client bound to one agent. */
export function client(agent: { url: string }) {
  return {
    get: (path: string, headers?: Record<string, string>) => call(agent.url, 'GET', path, undefined, headers),
    put: (path: string, body?: unknown, headers?: Record<string, string>) => call(agent.url, 'PUT', path, body, headers),
    del: (path: string) => call(agent.url, 'DELETE', path),
    req: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(agent.url, method, path, body, headers),
    /** Creates a session and returns its id (fails the test on error). */
    session: async (body: Record<string, unknown> = {}) => {
      const r = await call(agent.url, 'PUT', '/v1/session/create', body);
      if (r.status !== 200) throw new Error(`session create failed: ${r.status} ${r.text}`);
      return r.json<{ ID: string }>().ID;
    },
  };
}

/** Runs `body` with a client of an agent of its own (a fresh store), stopped and cleaned up after it. */
export async function onFreshAgent<A extends { url: string; stop(): Promise<unknown>; cleanup(): void }>(
  start: () => Promise<A>, body: (c: ReturnType<typeof client>) => Promise<void>): Promise<void> {
  const fresh = await start();
  try {
    await body(client(fresh));
  } finally {
    await fresh.stop();
    fresh.cleanup();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asserts a seed-dialect error: the status, the body's code, a message; returns the body. */
export function expectError(r: HttpResult, status: number, code: number): any {
  if (r.status !== status) throw new Error(`expected status ${status}, got ${r.status}: ${r.text}`);
  const body = r.json();
  if (body.code !== code) throw new Error(`expected code ${code}, got ${body.code}: ${r.text}`);
  if (typeof body.message !== 'string') throw new Error(`error without a message: ${r.text}`);
  return body;
}
