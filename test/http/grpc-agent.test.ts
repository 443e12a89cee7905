// Goal: the gRPC health service of a started agent, driven by an independent client (grpc-health-check's
// service definition) while services and checks change over HTTP: Watch sees exactly SERVING,
// NOT_SERVING, SERVING; unknown names; deregistration; List; and shutdown telling every watcher.
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & {
  check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  list(req: object, cb: (err: grpc.ServiceError | null, res?: { statuses: Record<string, { status: string }> }) => void): void;
  watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

let agent: Agent;
let health: HealthClient;

beforeAll(async () => {
  agent = await startAgent();
  health = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
});

afterAll(async () => {
  health?.close();
  await agent?.stop();
  agent?.cleanup();
});

const check = (h: HealthClient, service: string) =>
  new Promise<{ status?: string; code?: number; details?: string }>((res) =>
    h.check({ service }, (err, r) => res(err ? { code: err.code, details: err.details } : { status: r!.status })));

/** Collects a Watch stream's statuses; `until` resolves when the wanted count arrived. */
function watch(h: HealthClient, service: string) {
  const call = h.watch({ service });
  const seen: string[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let ended: { code: number } | undefined;
  call.on('data', (m: { status: string }) => {
    seen.push(m.status);
    for (const w of [...waiters]) if (seen.length >= w.n) { waiters.splice(waiters.indexOf(w), 1); w.resolve(); }
  });
  call.on('status', (s: grpc.StatusObject) => { ended = { code: s.code }; });
  call.on('error', () => {});
  return {
    seen,
    call,
    ended: () => ended,
    until: (n: number, ms = 10_000) => new Promise<void>((resolve, reject) => {
      if (seen.length >= n) return resolve();
      const timer = setTimeout(() => reject(new Error(`watch ${service}: ${seen.length} of ${n} messages: ${seen.join(',')}`)), ms);
      waiters.push({ n, resolve: () => { clearTimeout(timer); resolve(); } });
    }),
  };
}

async function registerTtlService(name: string, id: string, status = 'passing') {
  const r = await client(agent).put('/v1/agent/service/register', { Name: name, ID: id, Check: { TTL: '10m', Status: status } });
  expect(r.status, r.text).toBe(200);
}

const ttl = (id: string, how: 'pass' | 'warn' | 'fail') => client(agent).put(`/v1/agent/check/${how}/service:${id}`);

describe('gRPC health of a started agent', () => {
  test('"" is the process itself and is SERVING', async () => {
    expect(await check(health, '')).toEqual({ status: 'SERVING' });
  });

  test('a service going passing → critical → passing: Watch sees exactly SERVING, NOT_SERVING, SERVING', async () => {
    await registerTtlService('g-web', 'g-web-1');
    const w = watch(health, 'g-web');
    await w.until(1);
    await ttl('g-web-1', 'fail');
    await w.until(2);
    await ttl('g-web-1', 'fail'); // unchanged: nothing is sent
    await ttl('g-web-1', 'warn'); // warning counts as healthy
    await w.until(3);
    await ttl('g-web-1', 'pass'); // still SERVING: nothing new
    await new Promise((r) => setTimeout(r, 300));
    expect(w.seen).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
    expect(await check(health, 'g-web')).toEqual({ status: 'SERVING' });
    w.call.cancel();
  });

  test('an unknown name: Check NOT_FOUND, Watch SERVICE_UNKNOWN until it is registered, and again after deregistration', async () => {
    expect(await check(health, 'g-later')).toEqual({ code: grpc.status.NOT_FOUND, details: 'unknown service g-later' });
    const w = watch(health, 'g-later');
    await w.until(1);
    await registerTtlService('g-later', 'g-later-1', 'critical');
    await w.until(2);
    await ttl('g-later-1', 'pass');
    await w.until(3);
    expect((await client(agent).put('/v1/agent/service/deregister/g-later-1')).status).toBe(200);
    await w.until(4);
    expect(w.seen).toEqual(['SERVICE_UNKNOWN', 'NOT_SERVING', 'SERVING', 'SERVICE_UNKNOWN']);
    expect(w.ended()).toBeUndefined(); // the stream stays open
    w.call.cancel();
  });

  test('one healthy instance of two keeps the name SERVING; List has every name', async () => {
    await registerTtlService('g-pair', 'g-pair-1');
    await registerTtlService('g-pair', 'g-pair-2');
    await ttl('g-pair-1', 'fail');
    expect(await check(health, 'g-pair')).toEqual({ status: 'SERVING' });
    const listed = await new Promise<Record<string, { status: string }>>((res, rej) => health.list({}, (err, r) => (err ? rej(err) : res(r!.statuses))));
    expect(listed['']).toEqual({ status: 'SERVING' });
    expect(listed['g-pair']).toEqual({ status: 'SERVING' });
    await ttl('g-pair-2', 'fail');
    expect(await check(health, 'g-pair')).toEqual({ status: 'NOT_SERVING' });
  });
});

describe('shutdown', () => {
  test('SIGTERM: watchers get NOT_SERVING, then their calls end with OK, and the agent exits 0', async () => {
    const own = await startAgent();
    const h = new Health(own.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
    const r = await client(own).put('/v1/agent/service/register', { Name: 'g-stop', Check: { TTL: '10m', Status: 'passing' } });
    expect(r.status).toBe(200);
    const process = watch(h, '');
    const svc = watch(h, 'g-stop');
    await Promise.all([process.until(1), svc.until(1)]);
    expect(await own.stop()).toBe(0);
    await Promise.all([process.until(2), svc.until(2)]);
    expect(process.seen).toEqual(['SERVING', 'NOT_SERVING']);
    expect(svc.seen).toEqual(['SERVING', 'NOT_SERVING']);
    for (let i = 0; i < 50 && (process.ended() === undefined || svc.ended() === undefined); i++) await new Promise((res) => setTimeout(res, 20));
    expect(process.ended()).toEqual({ code: grpc.status.OK });
    expect(svc.ended()).toEqual({ code: grpc.status.OK });
    h.close();
    own.cleanup();
  });
});
