// Goal: with authentication on, the gRPC health port shows a service's health only to a token that may
// read the service, as the HTTP API does, on a started agent. `""` (the agent itself, what a liveness probe
// asks without credentials) answers every caller; Check and Watch of a named service without a valid
// bearer token in the call's metadata end UNAUTHENTICATED, and with a token lacking service read on the
// name PERMISSION_DENIED; List needs a token and holds "" and the names it may read. `x-consul-token`
// works as `authorization: Bearer` does. A Watch ends UNAUTHENTICATED when its token expires. Without authentication every call answers, as before.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'a-grpc-health-acl-secret-that-is-long-enough';
const tokens = new TokenAuthority({ secret });
const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type Answer = { status?: string; statuses?: Record<string, string>; code?: number; details?: string };
type HealthClient = grpc.Client & {
  check(req: { service: string }, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  list(req: object, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: { statuses: Record<string, { status: string }> }) => void): void;
  watch(req: { service: string }, md: grpc.Metadata): grpc.ClientReadableStream<{ status: string }>;
};

let secured: Agent;
let open: Agent;
const clients: HealthClient[] = [];
let admin: string;
let webOnly: string;

function metadata(token?: string, header = 'authorization'): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set(header, header === 'authorization' ? `Bearer ${token}` : token);
  return md;
}

function health(agent: Agent): HealthClient {
  const h = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
  clients.push(h);
  return h;
}

const check = (h: HealthClient, service: string, md: grpc.Metadata) => new Promise<Answer>((resolve) =>
  h.check({ service }, md, (err, res) => resolve(err ? { code: err.code, details: err.details } : { status: res!.status })));

const list = (h: HealthClient, md: grpc.Metadata) => new Promise<Answer>((resolve) => h.list({}, md, (err, res) => resolve(err
  ? { code: err.code, details: err.details }
  : { statuses: Object.fromEntries(Object.entries(res!.statuses).map(([name, s]) => [name, s.status])) })));

/** A Watch: its first status, or how it ended. */
const watch = (h: HealthClient, service: string, md: grpc.Metadata) => new Promise<Answer>((resolve) => {
  const stream = h.watch({ service }, md);
  stream.on('data', (m: { status: string }) => { resolve({ status: m.status }); stream.cancel(); });
  stream.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
});

async function register(agent: Agent, name: string, token?: string): Promise<void> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const r = await call(agent.url, 'PUT', '/v1/agent/service/register', { Name: name, ID: name, Port: 80 }, headers);
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  // No leeway on exp: a token's expiry is when the tests say.
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret, clock_skew: '0s' } }));
  [secured, open] = await Promise.all([startAgent({ args: ['--config-file', configFile] }), startAgent()]);
  const everything: Rule[] = (['node', 'service', 'check', 'session', 'key', 'agent'] as const).map((resource) => ({ resource, prefix: '', access: 'write' }));
  admin = await tokens.mint({ subject: 'admin', rules: everything, ttlSeconds: 600 });
  webOnly = await tokens.mint({ subject: 'web', ttlSeconds: 600, rules: [{ resource: 'service', prefix: 'web', access: 'read' }] });
  for (const name of ['web', 'billing']) {
    await register(secured, name, admin);
    await register(open, name);
  }
});

afterAll(async () => {
  for (const c of clients) c.close();
  for (const a of [secured, open]) { await a?.stop(); a?.cleanup(); }
});

describe('gRPC health with authentication on', () => {
  test('"" answers without credentials, as a liveness probe asks it', async () => {
    const h = health(secured);
    expect(await check(h, '', metadata())).toEqual({ status: 'SERVING' });
    expect(await watch(h, '', metadata())).toEqual({ status: 'SERVING' });
  });

  test('a named service needs a valid token: UNAUTHENTICATED without one or with a bad one', async () => {
    const h = health(secured);
    for (const md of [metadata(), metadata('not-a-jwt'), metadata(await tokens.mint({ subject: 'old', rules: [], ttlSeconds: -120 }))]) {
      const answers = [await check(h, 'web', md), await watch(h, 'web', md), await list(h, md)];
      for (const a of answers) expect(a.code, JSON.stringify(a)).toBe(grpc.status.UNAUTHENTICATED);
    }
  });

  test('a token without service read on the name gets PERMISSION_DENIED; one with it gets the status', async () => {
    const h = health(secured);
    expect(await check(h, 'billing', metadata(webOnly))).toEqual({ code: grpc.status.PERMISSION_DENIED, details: 'permission denied: read on service "billing"' });
    expect((await watch(h, 'billing', metadata(webOnly))).code).toBe(grpc.status.PERMISSION_DENIED);
    expect(await check(h, 'web', metadata(webOnly))).toEqual({ status: 'SERVING' });
    expect(await watch(h, 'web', metadata(webOnly))).toEqual({ status: 'SERVING' });
    expect(await check(h, 'web', metadata(webOnly, 'x-consul-token'))).toEqual({ status: 'SERVING' });
    expect(await check(h, 'billing', metadata(admin))).toEqual({ status: 'SERVING' });
    // A name it may read but no instance of: NOT_FOUND, as without authentication.
    expect((await check(h, 'web-none', metadata(webOnly))).code).toBe(grpc.status.NOT_FOUND);
  });

  test('List holds "" and the names the token may read', async () => {
    const h = health(secured);
    expect(await list(h, metadata(webOnly))).toEqual({ statuses: { '': 'SERVING', web: 'SERVING' } });
    expect(await list(h, metadata(admin))).toEqual({ statuses: { '': 'SERVING', web: 'SERVING', billing: 'SERVING' } });
  });
});

describe('a Watch lives no longer than its token', () => {
  test('the call ends UNAUTHENTICATED at the token\'s expiry, having sent the status until then', async () => {
    const short = await tokens.mint({ subject: 'short', ttlSeconds: 2, rules: [{ resource: 'service', prefix: 'web', access: 'read' }] });
    const stream = health(secured).watch({ service: 'web' }, metadata(short));
    const statuses: string[] = [];
    stream.on('data', (m: { status: string }) => statuses.push(m.status));
    const started = Date.now();
    const ended = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    expect(statuses).toEqual(['SERVING']);
    expect(ended.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(ended.details).toBe('token expired');
    expect(Date.now() - started).toBeLessThan(10_000);
    // The agent no longer counts it.
    const self = await call(secured.url, 'GET', '/v1/agent/metrics?format=prometheus', undefined, { authorization: `Bearer ${admin}` });
    expect(self.text).toMatch(/^roster_grpc_watchers 0$/m);
  }, 20_000);
});

describe('gRPC health with authentication off', () => {
  test('every call answers without credentials', async () => {
    const h = health(open);
    expect(await check(h, 'billing', metadata())).toEqual({ status: 'SERVING' });
    expect(await watch(h, 'billing', metadata())).toEqual({ status: 'SERVING' });
    expect(await list(h, metadata())).toEqual({ statuses: { '': 'SERVING', web: 'SERVING', billing: 'SERVING' } });
  });
});
