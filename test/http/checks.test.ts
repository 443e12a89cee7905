// Goal: every check kind of registry.md's "Health check status" table (and consul-compat §4: outputs, thresholds, TTL lapse, alias, reaper, session coupling) driven against real loopback targets through a started agent's HTTP API only.
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';
import { closedPort, listen } from '../probes/servers.ts';
import { fakeDockerEngine, type EngineCall } from '../support/fake-docker.ts';

type Client = ReturnType<typeof client>;

interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string;
  ServiceID: string; ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string;
}
interface HealthEntry { Node: { Node: string }; Service: { ID: string; Service: string }; Checks: CheckRecord[] }
interface KvEntry { LockIndex: number; Key: string; Value: string | null; Session?: string; ModifyIndex: number }

const pollMs = 50;
/** Upper bound for a probe-driven status to show up: first probe within 1 s (Interval 1s), plus generous slack. */
const settleMs = 10_000;

let seq = 0;
/** Names no other test uses, so concurrent tests on one agent never meet. */
const uniq = (p: string) => `${p}-${(++seq).toString(36)}-${Date.now().toString(36)}`;

// ---------------------------------------------------------------- loopback targets

interface Seen { method: string; headers: http.IncomingHttpHeaders; body: string }
interface Target {
  url: string;
  /** Requests received so far (one per probe: keep-alives are off). */
  hits: number;
  seen: Seen[];
  /** The status of the next answers; a list answers the n-th request with its n-th element (the last one repeats). */
  answer: number | number[] | 'hang';
}

const targets = new Map<string, Target>();
const bodies: Record<number, string> = { 200: 'fine', 429: 'slow down', 500: 'boom' };
let httpBase = '';

/** An HTTP endpoint `/t/<name>` on the shared target server that answers as told. */
function target(name: string, answer: Target['answer']): Target {
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
const engineCalls: EngineCall[] = [];
const engineChildren = new Set<ChildProcess>();
const engine = fakeDockerEngine(engineCalls, engineChildren);
// gRPC health server: "" (whole server) and db SERVING, cache NOT_SERVING, flip SERVING until a test flips it.
const health = new HealthImplementation({ '': 'SERVING', db: 'SERVING', cache: 'NOT_SERVING', flip: 'SERVING' });
const grpcServer = new grpc.Server();
health.addToServer(grpcServer);
let grpcPort = 0;

let tcpPort = 0;
let closeTcp: () => Promise<void> = async () => {};
let closeHttp: () => Promise<void> = async () => {};

const dir = mkdtempSync(join(tmpdir(), 'roster-checks-'));
const engineSocket = join(dir, 'docker.sock');
const missingSocket = join(dir, 'nothing-here.sock');

/**
 * Agent "main": script checks over HTTP, a fast reaper, the fake engine as DOCKER_HOST. Every check on it
 * is bound to a service, so node1's node-level checks stay gossipHealth alone and alias checks see no others.
 */
let main: Agent;
/** Agent "local": only enable_local_script_checks, config-file checks, DOCKER_HOST at a socket nobody serves. */
let local: Agent;
let c: Client;
let lc: Client;

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

  const mainConfig = join(dir, 'main.json');
  writeFileSync(mainConfig, JSON.stringify({ enable_script_checks: true, check_reap_interval: '1s', check_deregister_min: '2s' }));
  const localConfig = join(dir, 'local.json');
  writeFileSync(localConfig, JSON.stringify({
    enable_local_script_checks: true,
    checks: [
      { id: 'local-script', name: 'local script', args: ['/bin/sh', '-c', 'echo local ok'], interval: '1s' },
      { id: 'local-docker', name: 'local docker', docker_container_id: 'web-1', args: ['/bin/true'], interval: '1s' },
    ],
  }));
  [main, local] = await Promise.all([
    startAgent({ args: ['--config-file', mainConfig], env: { DOCKER_HOST: `unix://${engineSocket}` } }),
    startAgent({ args: ['--config-file', localConfig], env: { DOCKER_HOST: `unix://${missingSocket}` } }),
  ]);
  c = client(main);
  lc = client(local);
});

afterAll(async () => {
  await Promise.all([main?.stop(), local?.stop()]);
  main?.cleanup();
  local?.cleanup();
  for (const child of engineChildren) child.kill('SIGKILL');
  engine.closeAllConnections();
  await new Promise((resolve) => engine.close(resolve));
  grpcServer.forceShutdown();
  await closeTcp();
  await closeHttp();
  rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- helpers

/** Polls `read` until `ok` holds or `timeoutMs` passes; returns the last value read either way. */
async function pollFor<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = settleMs): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || performance.now() > deadline) return v;
    await sleep(pollMs);
  }
}

async function agentChecks(cl: Client): Promise<Record<string, CheckRecord>> {
  const r = await cl.get('/v1/agent/checks');
  expect(r.status, r.text).toBe(200);
  return r.json();
}

const agentCheck = async (cl: Client, id: string) => (await agentChecks(cl))[id];

/** Waits until the agent's record of check `id` has the wanted fields; asserts them (with a diff when it never did). */
async function checkUntil(cl: Client, id: string, want: Partial<CheckRecord>, timeoutMs = settleMs): Promise<CheckRecord> {
  const matches = (r: CheckRecord | undefined) => r !== undefined && Object.entries(want).every(([k, v]) => (r as unknown as Record<string, unknown>)[k] === v);
  const rec = await pollFor(() => agentCheck(cl, id), matches, timeoutMs);
  expect(rec, `check ${id}`).toMatchObject(want);
  return rec!;
}

async function ok(p: Promise<{ status: number; text: string }>): Promise<string> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  return r.text;
}

/** Registers a service (no checks unless given) and returns its id. */
async function service(cl: Client, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  await ok(cl.put('/v1/agent/service/register', { Name: name, ...extra }));
  return name;
}

/** Registers a check through the agent; the body is sent as given. */
const registerCheck = (cl: Client, body: Record<string, unknown>) => ok(cl.put('/v1/agent/check/register', body));

/** A service of its own and a check on it (every check on the main agent is service-bound; see `main`). */
async function serviceCheck(name: string, check: Record<string, unknown>): Promise<{ svc: string; id: string }> {
  const svc = await service(c, uniq(name));
  const id = `${svc}-check`;
  await registerCheck(c, { ID: id, Name: `${name} check`, ServiceID: svc, ...check });
  return { svc, id };
}

async function sessionInfo(cl: Client, id: string): Promise<unknown[]> {
  const r = await cl.get(`/v1/session/info/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json();
}

async function kv(cl: Client, key: string): Promise<KvEntry | null> {
  const r = await cl.get(`/v1/kv/${key}`);
  if (r.status === 404) return null;
  expect(r.status, r.text).toBe(200);
  return r.json<KvEntry[]>()[0]!;
}

async function acquire(cl: Client, key: string, session: string): Promise<void> {
  const r = await cl.put(`/v1/kv/${key}?acquire=${session}`, 'held');
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
}

/** Waits until the session is gone (info → []), asserting that it went. */
async function sessionGone(cl: Client, id: string, timeoutMs = settleMs): Promise<void> {
  const list = await pollFor(() => sessionInfo(cl, id), (l) => l.length === 0, timeoutMs);
  expect(list, `session ${id} should be invalidated`).toEqual([]);
}

/** After the session's invalidation, a fresh session meets lock-delay on the key. */
async function expectLockDelay(cl: Client, key: string): Promise<void> {
  const fresh = await cl.session({});
  const body = expectError(await cl.put(`/v1/kv/${key}?acquire=${fresh}`, 'again'), 409, 1025);
  expect(body.details?.reason).toBe('lock-delay');
}

/**
 * The status the check had just before the target received its (k+1)-th request: the last sample taken
 * while exactly k requests had arrived, so the k-th result had ~an interval to apply. Returns when the
 * (k+1)-th request arrives (or at the deadline, then undefined if no sample was taken while hits == k).
 */
async function statusAfterProbe(cl: Client, id: string, t: Target, k: number, timeoutMs = settleMs): Promise<string | undefined> {
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

// ---------------------------------------------------------------- 1. HTTP

describe.concurrent('HTTP checks against a local server', () => {
  test('200 → passing, 429 → warning, 500 → critical, hanging past Timeout → critical, with Consul outputs', async () => {
    const svc = await service(c, uniq('http'));
    const ok200 = target(uniq('ok'), 200);
    const busy = target(uniq('busy'), 429);
    const fail = target(uniq('fail'), 500);
    const hang = target(uniq('hang'), 'hang');
    const reg = (id: string, url: string, extra: Record<string, unknown> = {}) =>
      registerCheck(c, { ID: `${svc}-${id}`, Name: id, ServiceID: svc, HTTP: url, Interval: '1s', ...extra });
    await Promise.all([reg('ok', ok200.url), reg('busy', busy.url), reg('fail', fail.url), reg('hang', hang.url, { Timeout: '500ms' })]);

    const okRec = await checkUntil(c, `${svc}-ok`, { Status: 'passing', Output: `HTTP GET ${ok200.url}: 200 OK Output: fine` });
    expect(okRec).toMatchObject({ Node: 'node1', ServiceID: svc, ServiceName: svc, Type: 'http', Interval: '1s' });
    await checkUntil(c, `${svc}-busy`, { Status: 'warning', Output: `HTTP GET ${busy.url}: 429 Too Many Requests Output: slow down` });
    await checkUntil(c, `${svc}-fail`, { Status: 'critical', Output: `HTTP GET ${fail.url}: 500 Internal Server Error Output: boom` });
    const hangRec = await checkUntil(c, `${svc}-hang`, {
      Status: 'critical', Output: `Get "${hang.url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
    expect(hangRec.Timeout).toBe('500ms');
    expect(hang.hits).toBeGreaterThan(0);

    // The same statuses through the health endpoints.
    const r = await c.get(`/v1/health/checks/${svc}`);
    expect(r.status, r.text).toBe(200);
    const byId = Object.fromEntries(r.json<CheckRecord[]>().map((k) => [k.CheckID, k.Status]));
    expect(byId).toEqual({ [`${svc}-ok`]: 'passing', [`${svc}-busy`]: 'warning', [`${svc}-fail`]: 'critical', [`${svc}-hang`]: 'critical' });
    const entries = (await c.get(`/v1/health/service/${svc}`)).json<HealthEntry[]>();
    expect(entries).toHaveLength(1);
    expect(entries[0]!.Checks.map((k) => k.CheckID)).toEqual(expect.arrayContaining(['gossipHealth', `${svc}-ok`, `${svc}-fail`]));
    expect((await c.get(`/v1/health/service/${svc}?passing`)).json()).toEqual([]);
    const warning = (await c.get('/v1/health/state/warning')).json<CheckRecord[]>();
    expect(warning.map((k) => k.CheckID)).toContain(`${svc}-busy`);
    const critical = (await c.get('/v1/health/state/critical')).json<CheckRecord[]>();
    expect(critical.map((k) => k.CheckID)).toEqual(expect.arrayContaining([`${svc}-fail`, `${svc}-hang`]));
  });

  test('Method, Header and Body reach the target; Consul headers are sent', async () => {
    const echo = target(uniq('echo'), 200);
    const { id } = await serviceCheck('http-echo', {
      HTTP: echo.url, Interval: '1s', Method: 'POST', Header: { 'X-Roster-Test': ['one', 'two'] }, Body: '{"ping":true}',
    });
    await checkUntil(c, id, { Status: 'passing', Output: `HTTP POST ${echo.url}: 200 OK Output: fine` });
    const seen = echo.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.body).toBe('{"ping":true}');
    expect(seen.headers['x-roster-test']).toBe('one, two');
    expect(seen.headers['user-agent']).toBe('Consul Health Check');
  });

  test('a target that starts failing turns the check critical', async () => {
    const t = target(uniq('flip'), 200);
    const { id } = await serviceCheck('http-flip', { HTTP: t.url, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing' });
    t.answer = 500;
    await checkUntil(c, id, { Status: 'critical', Output: `HTTP GET ${t.url}: 500 Internal Server Error Output: boom` });
  });
});

// ---------------------------------------------------------------- 2. TCP, 3. gRPC

describe.concurrent('TCP and gRPC checks', () => {
  test('TCP: a listening port → passing "TCP connect <addr>: Success"; a closed port → critical', async () => {
    const closed = await closedPort();
    const open = await serviceCheck('tcp-open', { TCP: `127.0.0.1:${tcpPort}`, Interval: '1s' });
    const shut = await serviceCheck('tcp-closed', { TCP: `127.0.0.1:${closed}`, Interval: '1s' });
    const rec = await checkUntil(c, open.id, { Status: 'passing', Output: `TCP connect 127.0.0.1:${tcpPort}: Success` });
    expect(rec.Type).toBe('tcp');
    await checkUntil(c, shut.id, { Status: 'critical', Output: `dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });

  test('gRPC: SERVING → passing, NOT_SERVING → critical, unknown service → critical NotFound', async () => {
    const db = `127.0.0.1:${grpcPort}/db`;
    const cache = `127.0.0.1:${grpcPort}/cache`;
    const unknown = `127.0.0.1:${grpcPort}/nosuch`;
    const a = await serviceCheck('grpc-db', { GRPC: db, Interval: '1s' });
    const b = await serviceCheck('grpc-cache', { GRPC: cache, Interval: '1s' });
    const u = await serviceCheck('grpc-unknown', { GRPC: unknown, Interval: '1s' });
    const rec = await checkUntil(c, a.id, { Status: 'passing', Output: `gRPC check ${db}: success` });
    expect(rec.Type).toBe('grpc');
    await checkUntil(c, b.id, { Status: 'critical', Output: `gRPC ${cache} serving status: NOT_SERVING` });
    const uRec = await pollFor(() => agentCheck(c, u.id), (r) => r?.Output !== '');
    expect(uRec?.Status).toBe('critical');
    expect(uRec?.Output).toMatch(/^rpc error: code = NotFound desc = /);
  });

  test('gRPC: host:port alone asks about the whole server', async () => {
    const whole = `127.0.0.1:${grpcPort}`;
    const { id } = await serviceCheck('grpc-whole', { GRPC: whole, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing', Output: `gRPC check ${whole}: success` });
  });

  test('gRPC: a service switched to NOT_SERVING turns the check critical', async () => {
    const flip = `127.0.0.1:${grpcPort}/flip`;
    const { id } = await serviceCheck('grpc-flip', { GRPC: flip, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing' });
    health.setStatus('flip', 'NOT_SERVING');
    await checkUntil(c, id, { Status: 'critical', Output: `gRPC ${flip} serving status: NOT_SERVING` });
  });
});

// ---------------------------------------------------------------- 4. script

describe.concurrent('Script checks', () => {
  test('exit 0 / 1 / 2 → passing / warning / critical with the output', async () => {
    const sh = (script: string) => ({ Args: ['/bin/sh', '-c', script], Interval: '1s' });
    const p = await serviceCheck('script-ok', sh('echo all good; exit 0'));
    const w = await serviceCheck('script-warn', sh('echo degraded; exit 1'));
    const k = await serviceCheck('script-crit', sh('echo down; exit 2'));
    const rec = await checkUntil(c, p.id, { Status: 'passing', Output: 'all good\n' });
    expect(rec.Type).toBe('script');
    await checkUntil(c, w.id, { Status: 'warning', Output: 'degraded\n' });
    await checkUntil(c, k.id, { Status: 'critical', Output: 'down\n' });
  });

  test('a script sleeping past Timeout "1s" → critical "Timed out (1s) running check"', async () => {
    const { id } = await serviceCheck('script-slow', { Args: ['/bin/sleep', '5'], Interval: '1s', Timeout: '1s' });
    await checkUntil(c, id, { Status: 'critical', Output: 'Timed out (1s) running check' });
  });

  test('without enable_script_checks, registering Args (or a container check) over HTTP → 403 code 1004', async () => {
    const body = expectError(await lc.put('/v1/agent/check/register', { Name: uniq('remote-script'), Args: ['/bin/true'], Interval: '1s' }), 403, 1004);
    expect(body.message).toContain('enable_script_checks');
    expectError(await lc.put('/v1/agent/check/register', {
      Name: uniq('remote-container'), Args: ['/bin/true'], DockerContainerID: 'web-1', Interval: '1s',
    }), 403, 1004);
    expectError(await lc.put('/v1/agent/service/register', {
      Name: uniq('remote-svc'), Check: { Args: ['/bin/true'], Interval: '1s' },
    }), 403, 1004);
    expect(Object.keys(await agentChecks(lc)).sort()).toEqual(['local-docker', 'local-script']);
  });

  test('with only enable_local_script_checks, the config file\'s script check runs', async () => {
    await checkUntil(lc, 'local-script', { Status: 'passing', Output: 'local ok\n', Type: 'script', Name: 'local script' });
  });
});

// ---------------------------------------------------------------- 5. TTL

describe.concurrent('TTL checks', () => {
  test('pass / warn / fail (?note=) and update set status and output', async () => {
    const { id } = await serviceCheck('ttl-set', { TTL: '10m' });
    const first = await agentCheck(c, id);
    expect(first).toMatchObject({ Status: 'critical', Output: '', Type: 'ttl' });
    expect(await ok(c.put(`/v1/agent/check/pass/${id}?note=all%20good`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: 'all good' });
    expect(await ok(c.put(`/v1/agent/check/warn/${id}?note=slow`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'warning', Output: 'slow' });
    expect(await ok(c.put(`/v1/agent/check/fail/${id}?note=down`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'critical', Output: 'down' });
    expect(await ok(c.put(`/v1/agent/check/update/${id}`, { Status: 'passing', Output: 'via update' }))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: 'via update' });
    expect(await ok(c.put(`/v1/agent/check/pass/${id}`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: '' });
    expectError(await c.put(`/v1/agent/check/update/${id}`, { Status: 'bogus', Output: 'x' }), 400, 1009);
  });

  test('no update within TTL "1s" → critical "TTL expired"', async () => {
    const { id } = await serviceCheck('ttl-lapse', { TTL: '1s', Status: 'passing' });
    await checkUntil(c, id, { Status: 'critical', Output: 'TTL expired' }, 1000 + 5000);
    const critical = (await c.get('/v1/health/state/critical')).json<CheckRecord[]>();
    expect(critical.map((k) => k.CheckID)).toContain(id);
  });

  test('a lapse after an update keeps the last output: "TTL expired (last output before timeout follows): <out>"', async () => {
    const { id } = await serviceCheck('ttl-lapse-out', { TTL: '1s' });
    await ok(c.put(`/v1/agent/check/pass/${id}?note=last%20words`));
    await checkUntil(c, id, { Status: 'critical', Output: 'TTL expired (last output before timeout follows): last words' }, 1000 + 5000);
  });

  test('pass on a non-TTL check → 400 1009; unknown id → 404 1006', async () => {
    const t = target(uniq('ttl-not'), 200);
    const { id } = await serviceCheck('not-ttl', { HTTP: t.url, Interval: '1s' });
    expectError(await c.put(`/v1/agent/check/pass/${id}`), 400, 1009);
    expectError(await c.put(`/v1/agent/check/update/${id}`, { Status: 'passing' }), 400, 1009);
    const missing = uniq('no-such-check');
    expectError(await c.put(`/v1/agent/check/pass/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/warn/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/fail/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/update/${missing}`, { Status: 'passing' }), 404, 1006);
  });
});

// ---------------------------------------------------------------- 6. alias

describe.concurrent('Alias checks', () => {
  test('an alias follows the aliased service\'s TTL check: pass → warn → fail with Consul outputs', async () => {
    const tgt = await service(c, uniq('alias-tgt'), { Check: { TTL: '10m' } });
    const holder = await service(c, uniq('alias-holder'));
    const id = `${holder}-alias`;
    await registerCheck(c, { ID: id, Name: 'alias', ServiceID: holder, AliasService: tgt });
    const name = `Service '${tgt}' check`;
    await checkUntil(c, id, { Status: 'critical', Output: `Aliased check "${name}" failing: `, Type: 'alias' });
    await ok(c.put(`/v1/agent/check/pass/service:${tgt}?note=fine`));
    await checkUntil(c, id, { Status: 'passing', Output: 'All checks passing.' });
    await ok(c.put(`/v1/agent/check/warn/service:${tgt}?note=slow`));
    await checkUntil(c, id, { Status: 'warning', Output: `Aliased check "${name}" failing: slow` });
    await ok(c.put(`/v1/agent/check/fail/service:${tgt}?note=down`));
    await checkUntil(c, id, { Status: 'critical', Output: `Aliased check "${name}" failing: down` });
    await ok(c.put(`/v1/agent/check/pass/service:${tgt}`));
    await checkUntil(c, id, { Status: 'passing', Output: 'All checks passing.' });
  });

  test('an alias of a missing service → critical "Service <id> could not be found on node node1"', async () => {
    const holder = await service(c, uniq('alias-holder'));
    const missing = uniq('alias-missing');
    const id = `${holder}-alias`;
    await registerCheck(c, { ID: id, Name: 'alias', ServiceID: holder, AliasService: missing });
    await checkUntil(c, id, { Status: 'critical', Output: `Service ${missing} could not be found on node node1` });
  });
});

// ---------------------------------------------------------------- 7. thresholds

describe.concurrent('Thresholds (counters start at the threshold)', () => {
  test('SuccessBeforePassing 2 / FailuresBeforeCritical 2: first result at once, then 2 consecutive after a change', async () => {
    // Answers by request number: 200, 500, 500, 200, 200, then 200 on.
    const t = target(uniq('thr'), [200, 500, 500, 200, 200]);
    const { id } = await serviceCheck('thr', { HTTP: t.url, Interval: '1s', SuccessBeforePassing: 2, FailuresBeforeCritical: 2 });
    const initial = (await agentCheck(c, id))?.Status;
    if (t.hits === 0) expect(initial).toBe('critical'); // no probe yet: still the initial status
    const seen: (string | undefined)[] = [];
    for (let k = 1; k <= 5; k++) seen.push(await statusAfterProbe(c, id, t, k));
    // after: 1st (200, applies at once), 2nd (500, first opposite: unchanged), 3rd (500), 4th (200: unchanged), 5th (200)
    expect(seen).toEqual(['passing', 'passing', 'critical', 'critical', 'passing']);
  });

  test('FailuresBeforeWarning 1 + FailuresBeforeCritical 3: warning first, then critical', async () => {
    const t = target(uniq('thr-warn'), [200, 500, 500, 500]);
    const { id } = await serviceCheck('thr-warn', { HTTP: t.url, Interval: '1s', FailuresBeforeWarning: 1, FailuresBeforeCritical: 3 });
    const seen: (string | undefined)[] = [];
    for (let k = 1; k <= 3; k++) seen.push(await statusAfterProbe(c, id, t, k));
    expect(seen).toEqual(['passing', 'warning', 'warning']);
    await checkUntil(c, id, { Status: 'critical', Output: `HTTP GET ${t.url}: 500 Internal Server Error Output: boom` });
    expect(t.hits).toBeGreaterThanOrEqual(4);
  });
});

// ---------------------------------------------------------------- 8. reaper

describe.concurrent('Reaper (DeregisterCriticalServiceAfter; check_reap_interval 1s, check_deregister_min 2s)', () => {
  test('a service whose check stays critical past DeregisterCriticalServiceAfter is removed with its checks and bound sessions', async () => {
    const svc = uniq('reap');
    await service(c, svc, {
      Checks: [
        { CheckID: `${svc}-crit`, Name: 'crit', TTL: '10m', Status: 'critical', DeregisterCriticalServiceAfter: '2s' },
        { CheckID: `${svc}-ok`, Name: 'ok', TTL: '10m', Status: 'passing' },
      ],
    });
    // A session bound to the *other*, passing check of the same service, holding a lock.
    const session = await c.session({ ServiceChecks: [{ ID: `${svc}-ok` }] });
    const key = `checks/${svc}`;
    await acquire(c, key, session);
    expect(Object.keys((await c.get('/v1/agent/services')).json())).toContain(svc);

    const services = await pollFor(async () => (await c.get('/v1/agent/services')).json<Record<string, unknown>>(), (s) => !(svc in s), 10_000);
    expect(Object.keys(services)).not.toContain(svc);
    const healthR = await c.get(`/v1/health/service/${svc}`);
    expect(healthR.status, healthR.text).toBe(200);
    expect(healthR.json()).toEqual([]);
    expect((await c.get(`/v1/health/checks/${svc}`)).json()).toEqual([]);
    const checks = await agentChecks(c);
    expect(checks[`${svc}-crit`]).toBeUndefined();
    expect(checks[`${svc}-ok`]).toBeUndefined();
    await sessionGone(c, session, 2000);
    const e = await kv(c, key);
    expect(e?.Session).toBeUndefined();
    expect(e?.Value).toBe(Buffer.from('held').toString('base64'));
  });
});

// ---------------------------------------------------------------- 9. sessions bound to checks

describe.concurrent('Sessions bound to checks', () => {
  /** A service with an HTTP check against its own target, waited to passing. */
  async function webService(): Promise<{ svc: string; checkId: string; t: Target }> {
    const t = target(uniq('web'), 200);
    const svc = await service(c, uniq('web'), { Check: { HTTP: t.url, Interval: '1s' } });
    const checkId = `service:${svc}`;
    await checkUntil(c, checkId, { Status: 'passing', Name: `Service '${svc}' check` });
    return { svc, checkId, t };
  }

  test('Behavior release: the bound HTTP check going critical invalidates the session, releases the lock, arms lock-delay', async () => {
    const { checkId, t } = await webService();
    const session = await c.session({ ServiceChecks: [{ ID: checkId }] });
    const info = (await sessionInfo(c, session))[0] as { ServiceChecks: { ID: string }[] };
    expect(info.ServiceChecks.map((x) => x.ID)).toEqual([checkId]);
    const key = `checks/${uniq('lock-release')}`;
    await acquire(c, key, session);
    const before = (await kv(c, key))!;
    t.answer = 500;
    await sessionGone(c, session);
    expect((await agentCheck(c, checkId))?.Status).toBe('critical');
    const after = await kv(c, key);
    expect(after).not.toBeNull();
    expect(after!.Session).toBeUndefined();
    expect(after!.Value).toBe(before.Value);
    expect(after!.LockIndex).toBe(before.LockIndex);
    expect(after!.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
    await expectLockDelay(c, key);
  });

  test('Behavior delete: the bound check going critical deletes the held key, lock-delay applies', async () => {
    const { checkId, t } = await webService();
    const session = await c.session({ ServiceChecks: [{ ID: checkId }], Behavior: 'delete' });
    const key = `checks/${uniq('lock-delete')}`;
    await acquire(c, key, session);
    t.answer = 500;
    await sessionGone(c, session);
    expect(await kv(c, key)).toBeNull();
    await expectLockDelay(c, key);
  });

  test('NodeChecks: an agent-registered node-level HTTP check going critical invalidates the session', async () => {
    const t = target(uniq('node-http'), 200);
    const checkId = uniq('node-http');
    await registerCheck(lc, { ID: checkId, Name: 'node http', HTTP: t.url, Interval: '1s' });
    await checkUntil(lc, checkId, { Status: 'passing', ServiceID: '' });
    const session = await lc.session({ NodeChecks: [checkId] });
    const key = `checks/${uniq('node-lock')}`;
    await acquire(lc, key, session);
    t.answer = 500;
    await sessionGone(lc, session);
    expect((await kv(lc, key))?.Session).toBeUndefined();
    await expectLockDelay(lc, key);
  });

  test('binding a critical check at create → 400 1009', async () => {
    const svc = await service(c, uniq('crit-bind'), { Check: { TTL: '10m' } }); // registered critical by default
    expectError(await c.put('/v1/session/create', { ServiceChecks: [{ ID: `service:${svc}` }] }), 400, 1009);
  });

  test('deregistering the service invalidates the bound session and releases its lock', async () => {
    const svc = await service(c, uniq('dereg'), { Check: { TTL: '10m', Status: 'passing' } });
    const session = await c.session({ ServiceChecks: [{ ID: `service:${svc}` }] });
    const key = `checks/${uniq('dereg-lock')}`;
    await acquire(c, key, session);
    await ok(c.put(`/v1/agent/service/deregister/${svc}`));
    await sessionGone(c, session, 3000);
    expect((await kv(c, key))?.Session).toBeUndefined();
    await expectLockDelay(c, key);
  });

  test('deregistering the bound check itself invalidates the session', async () => {
    const { id } = await serviceCheck('dereg-check', { TTL: '10m', Status: 'passing' });
    const session = await c.session({ ServiceChecks: [{ ID: id }] });
    await ok(c.put(`/v1/agent/check/deregister/${id}`));
    await sessionGone(c, session, 3000);
  });

  test('a bound TTL check failed through the API invalidates the session', async () => {
    const { id } = await serviceCheck('ttl-bound', { TTL: '10m', Status: 'passing' });
    const session = await c.session({ ServiceChecks: [{ ID: id }] });
    await ok(c.put(`/v1/agent/check/fail/${id}?note=gone`));
    await sessionGone(c, session, 3000);
  });
});

// ---------------------------------------------------------------- 10. container exec

describe.concurrent('Container exec checks through the Docker Engine API', () => {
  test('RuntimeContainerID / DockerContainerID with Args exiting 0 / 1 / 2 → passing / warning / critical', async () => {
    const sh = (script: string) => ['/bin/sh', '-c', script];
    const p = await serviceCheck('ctr-ok', { RuntimeContainerID: 'web-1', Args: sh('echo ready; exit 0'), Interval: '1s' });
    const w = await serviceCheck('ctr-warn', { RuntimeContainerID: 'web-1', Args: sh('echo degraded; exit 1'), Interval: '1s' });
    const k = await serviceCheck('ctr-crit', { DockerContainerID: 'web-1', Args: sh('echo down; exit 2'), Interval: '1s' });
    const rec = await checkUntil(c, p.id, { Status: 'passing', Output: 'ready\n' });
    expect(rec.Type).toBe('docker');
    await checkUntil(c, w.id, { Status: 'warning', Output: 'degraded\n' });
    await checkUntil(c, k.id, { Status: 'critical', Output: 'down\n' });
    const creates = engineCalls.filter((x) => x.method === 'POST' && x.path === '/containers/web-1/exec');
    expect(creates.map((x) => (x.body as { Cmd: string[] }).Cmd)).toEqual(expect.arrayContaining([sh('echo ready; exit 0'), sh('echo down; exit 2')]));
  });

  test('an unknown container → critical "create exec failed for unknown container <id>"', async () => {
    const { id } = await serviceCheck('ctr-missing', { RuntimeContainerID: 'missing', Args: ['/bin/true'], Interval: '1s' });
    await checkUntil(c, id, { Status: 'critical', Output: 'create exec failed for unknown container missing' });
  });

  test('an agent whose DOCKER_HOST names a missing socket → critical with an output naming the address', async () => {
    const rec = await pollFor(() => agentCheck(lc, 'local-docker'), (r) => r?.Output !== '' && r?.Output !== undefined);
    expect(rec).toMatchObject({ Status: 'critical', Type: 'docker' });
    expect(rec?.Output).toContain(`unix://${missingSocket}`);
  });
});
