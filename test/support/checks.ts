/**
 * What the check suites share: loopback targets for the probes (an HTTP server answering as told, a TCP listener,
 * a gRPC health server, a fake Docker Engine), the agents they run against, and polling helpers.
 */
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { listen } from '../probes/servers.ts';
import { call, client, expectError, sleep } from './agent.ts';
import { fakeDockerEngine, type EngineCall } from './fake-docker.ts';

export type Client = ReturnType<typeof client>;

export interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string;
  ServiceID: string; ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string;
}
export interface HealthEntry { Node: { Node: string }; Service: { ID: string; Service: string }; Checks: CheckRecord[] }
export interface KvEntry { LockIndex: number; Key: string; Value: string | null; Session?: string; ModifyIndex: number }

export const pollMs = 50;
/** Upper bound for a probe-driven status to show up: first probe within 1 s (Interval 1s), plus generous slack. */
export const settleMs = 10_000;

export let seq = 0;
/** Names no other test uses, so concurrent tests on one agent never meet. */
export const uniq = (p: string) => `${p}-${(++seq).toString(36)}-${Date.now().toString(36)}`;

// ---------------------------------------------------------------- loopback targets

export interface Seen { method: string; headers: http.IncomingHttpHeaders; body: string }
export interface Target {
  url: string;
  /** Requests received so far (one per probe: keep-alives are off). */
  hits: number;
  seen: Seen[];
  /** The status of the next answers; a list answers the n-th request with its n-th element (the last one repeats). */
  answer: number | number[] | 'hang';
}

export const targets = new Map<string, Target>();
export const bodies: Record<number, string> = { 200: 'fine', 429: 'slow down', 500: 'boom' };
export let httpBase = '';

/** An HTTP endpoint `/t/<name>` on the shared target server that answers as told. */
export function target(name: string, answer: Target['answer']): Target {
  const t: Target = { url: `${httpBase}/t/${name}`, hits: 0, seen: [], answer };
  targets.set(name, t);
  return t;
}

const httpTarget = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const t = targets.get(/^\/t\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '');
    if (!t) return res.writeHead(404).end('no such target');
    t.hits++;
    t.seen.push({ method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
    if (t.answer === 'hang') return; // never answers; the probe's Timeout ends it
    const status = Array.isArray(t.answer) ? t.answer[Math.min(t.hits, t.answer.length) - 1]! : t.answer;
    res.writeHead(status, { 'Content-Type': 'text/plain' }).end(bodies[status] ?? '');
  });
});

/** A fake Docker Engine on a unix socket (see fakeDockerEngine): container "missing" is unknown (404). */
export const engineCalls: EngineCall[] = [];
const engineChildren = new Set<ChildProcess>();
const engine = fakeDockerEngine(engineCalls, engineChildren);
// gRPC health server: "" (whole server) and db SERVING, cache NOT_SERVING, flip SERVING until a test flips it.
export const health = new HealthImplementation({ '': 'SERVING', db: 'SERVING', cache: 'NOT_SERVING', flip: 'SERVING' });
const grpcServer = new grpc.Server();
health.addToServer(grpcServer);
export let grpcPort = 0;

export let tcpPort = 0;

const dir = mkdtempSync(join(tmpdir(), 'roster-checks-'));
const engineSocket = join(dir, 'docker.sock');
export const missingSocket = join(dir, 'nothing-here.sock');
// ---------------------------------------------------------------- helpers

/** Polls `read` until `ok` holds or `timeoutMs` passes; returns the last value read either way. */
export async function pollFor<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = settleMs): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || performance.now() > deadline) return v;
    await sleep(pollMs);
  }
}

export async function agentChecks(cl: Client): Promise<Record<string, CheckRecord>> {
  const r = await cl.get('/v1/agent/checks');
  expect(r.status, r.text).toBe(200);
  return r.json();
}

export const agentCheck = async (cl: Client, id: string) => (await agentChecks(cl))[id];

/** Waits until the agent's record of check `id` has the wanted fields; asserts them (with a diff when it never did). */
export async function checkUntil(cl: Client, id: string, want: Partial<CheckRecord>, timeoutMs = settleMs): Promise<CheckRecord> {
  const matches = (r: CheckRecord | undefined) => r !== undefined && Object.entries(want).every(([k, v]) => (r as unknown as Record<string, unknown>)[k] === v);
  const rec = await pollFor(() => agentCheck(cl, id), matches, timeoutMs);
  expect(rec, `check ${id}`).toMatchObject(want);
  return rec!;
}

/**
 * Registers a check of `definition` under `id` (its ID and Name) on the agent at `agentUrl`, waits for its
 * first output, deregisters it and returns it: what one probe of a target says.
 */
export async function firstResult(agentUrl: string, id: string, definition: Record<string, unknown>): Promise<{ Status: string; Output: string }> {
  const r = await call(agentUrl, 'PUT', '/v1/agent/check/register', { ID: id, Name: id, Interval: '1s', ...definition });
  expect(r.status, r.text).toBe(200);
  for (let deadline = Date.now() + settleMs; Date.now() < deadline; await sleep(100)) {
    const check = (await call(agentUrl, 'GET', '/v1/agent/checks')).json<Record<string, CheckRecord>>()[id];
    if (check !== undefined && check.Output !== '') {
      expect((await call(agentUrl, 'PUT', `/v1/agent/check/deregister/${id}`)).status).toBe(200);
      return check;
    }
  }
  throw new Error(`check ${id} never ran`);
}

export async function ok(p: Promise<{ status: number; text: string }>): Promise<string> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  return r.text;
}

/** Registers a service (no checks unless given) and returns its id. */
export async function service(cl: Client, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  await ok(cl.put('/v1/agent/service/register', { Name: name, ...extra }));
  return name;
}

/** Registers a check through the agent; the body is sent as given. */
export const registerCheck = (cl: Client, body: Record<string, unknown>) => ok(cl.put('/v1/agent/check/register', body));

/** A service of its own and a check on it (every check on the main agent is service-bound; see `main`). */
export async function serviceCheck(name: string, check: Record<string, unknown>): Promise<{ svc: string; id: string }> {
  const svc = await service(c, uniq(name));
  const id = `${svc}-check`;
  await registerCheck(c, { ID: id, Name: `${name} check`, ServiceID: svc, ...check });
  return { svc, id };
}

export async function sessionInfo(cl: Client, id: string): Promise<unknown[]> {
  const r = await cl.get(`/v1/session/info/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json();
}

export async function kv(cl: Client, key: string): Promise<KvEntry | null> {
  const r = await cl.get(`/v1/kv/${key}`);
  if (r.status === 404) return null;
  expect(r.status, r.text).toBe(200);
  return r.json<KvEntry[]>()[0]!;
}

export async function acquire(cl: Client, key: string, session: string): Promise<void> {
  const r = await cl.put(`/v1/kv/${key}?acquire=${session}`, 'held');
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
}

/** Waits until the session is gone (info → []), asserting that it went. */
export async function sessionGone(cl: Client, id: string, timeoutMs = settleMs): Promise<void> {
  const list = await pollFor(() => sessionInfo(cl, id), (l) => l.length === 0, timeoutMs);
  expect(list, `session ${id} should be invalidated`).toEqual([]);
}

/** After the session's invalidation, a fresh session meets lock-delay on the key. */
export async function expectLockDelay(cl: Client, key: string): Promise<void> {
  const fresh = await cl.session({});
  const body = expectError(await cl.put(`/v1/kv/${key}?acquire=${fresh}`, 'again'), 409, 1025);
  expect(body.details?.reason).toBe('lock-delay');
}

/**
 * The status the check had just before the target received its (k+1)-th request: the last sample taken
 * while exactly k requests had arrived, so the k-th result had ~an interval to apply. Returns when the
 * (k+1)-th request arrives (or at the deadline, then undefined if no sample was taken while hits == k).
 */
export async function statusAfterProbe(cl: Client, id: string, t: Target, k: number, timeoutMs = settleMs): Promise<string | undefined> {
  const deadline = performance.now() + timeoutMs;
  let last: string | undefined;
  while (performance.now() < deadline) {
    const before = t.hits;
    if (before > k) return last;
    const status = (await agentCheck(cl, id))?.Status;
    if (before === k && t.hits === k) last = status;
    await sleep(pollMs);
  }
  return last;
}

/** Agent "main": script checks over HTTP, a fast reaper, the fake engine as DOCKER_HOST. */
export let c: Client;
/** Agent "local": only enable_local_script_checks, config-file checks, DOCKER_HOST at a socket nobody serves. */
export let lc: Client;

type Start = (o: { args: string[]; env: Record<string, string> }) => Promise<{ url: string; stop(): Promise<unknown>; cleanup(): void }>;

/**
 * Starts the loopback targets and the agent "main" (through `start`: either harness) before the file's tests, with
 * `local` the agent "local" too, and ends them all after. Every check on "main" is bound to a service, so node1's
 * node-level checks stay gossipHealth alone and alias checks see no others.
 */
export function checksSuite(start: Start, o: { local: boolean }): void {
  const agents: Awaited<ReturnType<Start>>[] = [];
  let closeTcp: () => Promise<void> = async () => {};
  let closeHttp: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const h = await listen(httpTarget);
    httpBase = `http://127.0.0.1:${h.port}`;
    closeHttp = h.close;
    const tcp = await listen(net.createServer((s) => s.end()));
    tcpPort = tcp.port;
    closeTcp = tcp.close;
    await new Promise<void>((resolve) => engine.listen(engineSocket, resolve));
    grpcPort = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))));
    agents.push(...await Promise.all([
      start({ args: ['--config-file', writeConfig('main.json', mainConfig)], env: { DOCKER_HOST: `unix://${engineSocket}` } }),
      ...(o.local ? [start({ args: ['--config-file', writeConfig('local.json', localConfig)], env: { DOCKER_HOST: `unix://${missingSocket}` } })] : []),
    ]));
    c = client(agents[0]!);
    if (agents[1] !== undefined) lc = client(agents[1]);
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    for (const a of agents) a.cleanup();
    for (const child of engineChildren) child.kill('SIGKILL');
    engine.closeAllConnections();
    await new Promise((resolve) => engine.close(resolve));
    grpcServer.forceShutdown();
    await closeTcp();
    await closeHttp();
    rmSync(dir, { recursive: true, force: true });
  });
}

const mainConfig = { enable_script_checks: true, check_reap_interval: '1s', check_deregister_min: '2s' };
const localConfig = {
  enable_local_script_checks: true,
  checks: [
    { id: 'local-script', name: 'local script', args: ['/bin/sh', '-c', 'echo local ok'], interval: '1s' },
    { id: 'local-docker', name: 'local docker', docker_container_id: 'web-1', args: ['/bin/true'], interval: '1s' },
  ],
};

function writeConfig(name: string, config: object): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(config));
  return file;
}
