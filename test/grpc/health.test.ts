// Goal: our grpc.health.v1.Health server, driven by a real ServingTracker over a real RegistryState and spoken to by grpc-health-check's independent client, keeps the contract of watch.md §1.6: Check/List/Watch answers, deduplicated and coalesced Watch streams, SERVICE_UNKNOWN for unknown or deregistered names, and a shutdown that ends every Watch with NOT_SERVING then OK.
import { silentLogger } from '../../src/ports/logger.ts';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterEach, expect, test } from 'vitest';
import type { CheckStatus } from '../../src/domain/types.ts';
import type { Command } from '../../src/domain/commands.ts';
import { startGrpcHealthServer, type GrpcHealthServerOptions } from '../../src/grpc/index.ts';
import { ServingTracker } from '../../src/runtime/index.ts';
import { apply, passiveDefinition, RegistryState } from '../../src/state/index.ts';

// ---------------------------------------------------------------- a registry fed through apply

/** A RegistryState changed only by applying commands, and the tracker recomputed from it on demand. */
class Registry {
  readonly state = new RegistryState();
  readonly tracker = new ServingTracker();
  private atMs = 1_000;

  run(cmd: Command): void {
    const { result } = apply(this.state, { index: this.state.index + 1, atMs: (this.atMs += 1_000), pid: `p${this.state.index}`, cmd });
    expect(result).toMatchObject({ ok: true });
  }

  node(node: string): void {
    this.run({ t: 'catalog.register', node, id: `id-${node}`, address: '127.0.0.1', meta: {}, checks: [{ checkId: 'gossipHealth', name: 'Gossip Health Status', status: 'passing', notes: '', output: '' }] });
  }

  /** Registers instance `id` of `service` on `node` with a TTL check `service:<id>` (passing). */
  service(node: string, id: string, service: string): void {
    this.run({
      t: 'service.register', node, replaceExistingChecks: false,
      service: { id, service, kind: '', tags: [], address: '', port: 8080, meta: {}, taggedAddresses: {}, weights: { Passing: 1, Warning: 1 }, enableTagOverride: false },
      checks: [{
        checkId: `service:${id}`, name: `Service '${service}' check`, notes: '', status: 'passing', output: '', serviceId: id, type: 'ttl',
        definition: { ...passiveDefinition, ttlMs: 60_000 },
      }],
    });
  }

  /** pass/warn/fail on a TTL check (a node-level one too: gossipHealth is set the same way). */
  set(node: string, checkId: string, status: CheckStatus): void {
    const check = this.state.checkOf(node, checkId);
    if (!check) throw new Error(`no check ${node}/${checkId}`);
    this.run({ t: 'check.update', node, checkId, generation: check.generation, via: 'ttl', status, output: '' });
  }

  deregister(node: string, serviceId: string): void {
    this.run({ t: 'service.deregister', node, serviceId });
  }

  update(): void {
    this.tracker.update(this.state);
  }

  /** `set`, then the tracker recomputed. */
  change(node: string, checkId: string, status: CheckStatus): void {
    this.set(node, checkId, status);
    this.update();
  }
}

// ---------------------------------------------------------------- server and client

type Status = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;
type HealthClient = grpc.Client & {
  check(req: { service: string }, cb: Callback<{ status: Status }>): void;
  list(req: object, cb: Callback<{ statuses: Record<string, { status: Status }> }>): void;
  watch(req: { service: string }): grpc.ClientReadableStream<{ status: Status }>;
};
const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function recordingLogger() {
  const lines: { level: string; msg: string | undefined }[] = [];
  const at = (level: string) => (_obj: object | string, msg?: string) => void lines.push({ level, msg });
  return { lines, logger: { ...silentLogger, info: at('info'), warn: at('warn'), error: at('error') } };
}

async function setup(reg: Registry, o: Partial<GrpcHealthServerOptions> = {}) {
  const log = recordingLogger();
  const server = await startGrpcHealthServer({ host: '127.0.0.1', port: 0, tracker: reg.tracker, logger: log.logger, ...o });
  const client = new Health(server.address, grpc.credentials.createInsecure()) as unknown as HealthClient;
  cleanups.push(() => server.stop(), () => client.close());
  return { server, client, log };
}

/** A registry with `nodes` and `services` ([node, id, name]), its tracker started, and a client of its server. */
async function serving(nodes: string[], services: [string, string, string][]): Promise<{ reg: Registry; client: HealthClient }> {
  const reg = new Registry();
  for (const node of nodes) reg.node(node);
  for (const [node, id, name] of services) reg.service(node, id, name);
  reg.tracker.start(reg.state);
  const { client } = await setup(reg);
  return { reg, client };
}

function check(client: HealthClient, service: string): Promise<{ status?: Status; code?: grpc.status; details?: string }> {
  return new Promise((resolve) => client.check({ service }, (err, res) => resolve(err ? { code: err.code, details: err.details } : { status: res!.status })));
}

function list(client: HealthClient): Promise<{ statuses?: Record<string, Status>; code?: grpc.status }> {
  return new Promise((resolve) => client.list({}, (err, res) => {
    if (err) return resolve({ code: err.code });
    resolve({ statuses: Object.fromEntries(Object.entries(res!.statuses).map(([name, r]) => [name, r.status])) });
  }));
}

/** A Watch call that records every message and how it ended. */
function watch(client: HealthClient, service: string) {
  const call = client.watch({ service });
  const seen: Status[] = [];
  let ended: grpc.StatusObject | undefined;
  call.on('data', (m: { status: Status }) => seen.push(m.status));
  call.on('status', (s) => (ended = s));
  call.on('error', () => {}); // the status event carries it
  cleanups.push(() => call.cancel());
  return {
    call, seen,
    ended: () => ended,
    /** Resolves once `count` messages have arrived. */
    until: (count: number) => expect.poll(() => seen.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(count),
  };
}

// ---------------------------------------------------------------- Watch

test('passing → critical → passing: Watch sees exactly SERVING, NOT_SERVING, SERVING, unchanged recomputes send nothing', async () => {
  const { reg, client } = await serving(['n1'], [['n1', 'web-1', 'web']]);
  const w = watch(client, 'web');
  await w.until(1);
  reg.update();
  reg.update();
  reg.change('n1', 'service:web-1', 'critical');
  reg.update();
  reg.set('n1', 'service:web-1', 'critical'); // same status again: a change of output only
  reg.update();
  await w.until(2);
  reg.change('n1', 'service:web-1', 'passing');
  reg.update();
  await w.until(3);
  // Barrier: a fresh Watch on the same connection is answered after everything already written to w.
  const barrier = watch(client, 'web');
  await barrier.until(1);
  expect(w.seen).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
  expect(w.ended()).toBeUndefined();
});

test('a name never registered: SERVICE_UNKNOWN at once, its status when registered later', async () => {
  const { reg, client } = await serving(['n1'], []);
  const w = watch(client, 'db');
  await w.until(1);
  expect(w.seen).toEqual(['SERVICE_UNKNOWN']);
  reg.service('n1', 'db-1', 'db');
  reg.update();
  await w.until(2);
  expect(w.seen).toEqual(['SERVICE_UNKNOWN', 'SERVING']);
});

test('deregistering the last instance sends SERVICE_UNKNOWN and the stream stays open', async () => {
  const { reg, client } = await serving(['n1'], [['n1', 'web-1', 'web']]);
  const w = watch(client, 'web');
  await w.until(1);
  reg.deregister('n1', 'web-1');
  reg.update();
  await w.until(2);
  expect(w.seen).toEqual(['SERVING', 'SERVICE_UNKNOWN']);
  // Still open: registering again is reported on the same call.
  reg.service('n1', 'web-2', 'web');
  reg.update();
  await w.until(3);
  expect(w.seen).toEqual(['SERVING', 'SERVICE_UNKNOWN', 'SERVING']);
  expect(w.ended()).toBeUndefined();
  expect(await check(client, 'web')).toEqual({ status: 'SERVING' });
});

test('a cancelled Watch is forgotten: later changes still reach the other watchers', async () => {
  const { reg, client } = await serving(['n1'], [['n1', 'web-1', 'web']]);
  const gone = watch(client, 'web');
  const stays = watch(client, 'web');
  await gone.until(1);
  await stays.until(1);
  gone.call.cancel();
  await expect.poll(() => gone.ended()?.code).toBe(grpc.status.CANCELLED);
  reg.change('n1', 'service:web-1', 'critical');
  await stays.until(2);
  expect(stays.seen).toEqual(['SERVING', 'NOT_SERVING']);
  expect(gone.seen).toEqual(['SERVING']);
});

test('a slow reader gets the newest status, not every change in between', async () => {
  const { reg, client } = await serving(['n1'], [['n1', 'web-1', 'web']]);
  const w = watch(client, 'web');
  await w.until(1);
  w.call.pause();
  const flips = 1_000;
  for (let i = 1; i <= flips; i++) {
    reg.change('n1', 'service:web-1', i % 2 === 1 ? 'critical' : 'passing');
  }
  reg.set('n1', 'service:web-1', 'critical'); // the newest value differs from the first one sent
  reg.update();
  w.call.resume();
  await expect.poll(() => w.seen.at(-1), { timeout: 10_000 }).toBe('NOT_SERVING');
  // Barrier: a fresh Watch on the same connection is answered after everything already written to w.
  await watch(client, 'web').until(1);
  // grpc-js queues 16 messages before write() returns false; after that only the newest is kept.
  expect(w.seen.length).toBeLessThanOrEqual(20);
  expect(w.seen.at(-1)).toBe('NOT_SERVING');
  for (let i = 1; i < w.seen.length; i++) expect(w.seen[i]).not.toBe(w.seen[i - 1]);
});

// ---------------------------------------------------------------- per-service status rules

test('warning counts as SERVING; a node-level critical check makes every instance on the node unhealthy', async () => {
  const { reg, client } = await serving(['n1'], [['n1', 'web-1', 'web'], ['n1', 'api-1', 'api']]);
  reg.change('n1', 'service:web-1', 'warning');
  expect(await check(client, 'web')).toEqual({ status: 'SERVING' });
  reg.change('n1', 'gossipHealth', 'critical');
  expect(await check(client, 'web')).toEqual({ status: 'NOT_SERVING' });
  expect(await check(client, 'api')).toEqual({ status: 'NOT_SERVING' });
  reg.change('n1', 'gossipHealth', 'passing');
  expect(await check(client, 'api')).toEqual({ status: 'SERVING' });
});

test('two instances, one healthy → SERVING; none healthy → NOT_SERVING', async () => {
  const { reg, client } = await serving(['n1', 'n2'], [['n1', 'web-1', 'web'], ['n2', 'web-2', 'web']]);
  reg.change('n1', 'service:web-1', 'critical');
  expect(await check(client, 'web')).toEqual({ status: 'SERVING' });
  reg.change('n2', 'gossipHealth', 'critical');
  expect(await check(client, 'web')).toEqual({ status: 'NOT_SERVING' });
});

// ---------------------------------------------------------------- Check and List

test('Check: unknown name → NOT_FOUND "unknown service x"; "" is the process, SERVING after tracker.start', async () => {
  const reg = new Registry();
  reg.node('n1');
  const { client } = await setup(reg);
  expect(await check(client, '')).toEqual({ status: 'NOT_SERVING' });
  reg.tracker.start(reg.state);
  expect(await check(client, '')).toEqual({ status: 'SERVING' });
  expect(await check(client, 'x')).toEqual({ code: grpc.status.NOT_FOUND, details: 'unknown service x' });
});

test('Check and Watch refuse names over 200 bytes with INVALID_ARGUMENT', async () => {
  const reg = new Registry();
  reg.tracker.start(reg.state);
  const { client } = await setup(reg);
  expect((await check(client, 'é'.repeat(101))).code).toBe(grpc.status.INVALID_ARGUMENT); // 202 bytes
  expect((await check(client, 'a'.repeat(200))).code).toBe(grpc.status.NOT_FOUND);
  const w = watch(client, 'a'.repeat(201));
  await expect.poll(() => w.ended()?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(w.seen).toEqual([]);
});

test('List: every name with its status, "" included; RESOURCE_EXHAUSTED past listEntriesMax', async () => {
  const reg = new Registry();
  reg.node('n1');
  reg.service('n1', 'web-1', 'web');
  reg.service('n1', 'db-1', 'db');
  reg.set('n1', 'service:db-1', 'critical');
  reg.tracker.start(reg.state);
  const { client } = await setup(reg, { listEntriesMax: 3 });
  expect(await list(client)).toEqual({ statuses: { '': 'SERVING', web: 'SERVING', db: 'NOT_SERVING' } });
  reg.service('n1', 'api-1', 'api');
  reg.update();
  expect(await list(client)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED });
});

// ---------------------------------------------------------------- shutdown

test('stop(): every watcher gets NOT_SERVING, then its call ends with OK, and the server closes without forcing', async () => {
  const reg = new Registry();
  reg.node('n1');
  reg.service('n1', 'web-1', 'web');
  reg.tracker.start(reg.state);
  const { server, client, log } = await setup(reg, { shutdownGraceMs: 20_000 });
  const web = watch(client, 'web');
  const self = watch(client, '');
  const unknown = watch(client, 'nobody');
  await Promise.all([web.until(1), self.until(1), unknown.until(1)]);
  await server.stop();
  for (const w of [web, self, unknown]) await expect.poll(() => w.ended()?.code).toBe(grpc.status.OK);
  expect(web.seen).toEqual(['SERVING', 'NOT_SERVING']);
  expect(self.seen).toEqual(['SERVING', 'NOT_SERVING']);
  expect(unknown.seen).toEqual(['SERVICE_UNKNOWN', 'NOT_SERVING']);
  // tryShutdown finished on its own: the grace never ran out.
  expect(log.lines.filter((l) => l.level === 'warn')).toEqual([]);
  // Frozen: later registry changes are ignored.
  reg.change('n1', 'service:web-1', 'passing');
  expect(reg.tracker.get('web')).toBe('NOT_SERVING');
});

test('stop(): a watcher that never reads cannot hold the server past the grace', async () => {
  const reg = new Registry();
  reg.node('n1');
  reg.service('n1', 'web-1', 'web');
  reg.tracker.start(reg.state);
  const { server, client, log } = await setup(reg, { shutdownGraceMs: 300 });
  const w = watch(client, 'web');
  await w.until(1);
  w.call.pause();
  // Enough changes, spread over turns of the event loop, to fill every buffer between server and client.
  for (let i = 1; i <= 20_000; i++) {
    reg.change('n1', 'service:web-1', i % 2 === 1 ? 'critical' : 'passing');
    if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const stopping = performance.now();
  await server.stop();
  // Done within the grace and the time to force it. On Node 20 the unread Watch keeps its session open until
  // the force, which is logged. On Node 24 grpc-js's graceful close of a session on a connection our listener
  // handed it reports done at once, and the data still queued reaches the client once it reads (below).
  expect(performance.now() - stopping).toBeLessThan(300 + 2000);
  for (const l of log.lines.filter((x) => x.level === 'warn')) expect(l.msg).toBe('gRPC health server: calls still open after the grace, forcing shutdown');
  // Whatever reached the client's buffers before the force is still read; then the call ends.
  w.call.resume();
  await expect.poll(() => w.ended(), { timeout: 10_000 }).toBeDefined();
});

test('stop() is idempotent', async () => {
  const reg = new Registry();
  reg.tracker.start(reg.state);
  const { server } = await setup(reg);
  await Promise.all([server.stop(), server.stop()]);
  expect(reg.tracker.get('')).toBe('NOT_SERVING');
});
