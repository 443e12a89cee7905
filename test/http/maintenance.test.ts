// Goal: maintenance mode as Consul's agent has it — `PUT /v1/agent/maintenance` and
// `/v1/agent/service/maintenance/<id>` register or remove the critical `_node_maintenance` /
// `_service_maintenance:<id>` checks — in both dialects (the consul one through the npm `consul` client's
// agent.maintenance / agent.service.maintenance), with their refusals, their effect on health answers, and,
// against a started process with authentication, their rules and their survival across a restart.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import Consul from 'consul';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent as startProcess, tempDataDir, type Agent as ProcessAgent } from '../support/agent.ts';
import { client, expectError, startAgent, type Agent } from '../support/in-process.ts';
import { Stream, subscribe } from '../support/stream.ts';

const nodeDefault = 'Maintenance mode is enabled for this node, but no reason was provided. This is a default message.';
const serviceDefault = 'Maintenance mode is enabled for this service, but no reason was provided. This is a default message.';

type Check = { CheckID: string; Name: string; Status: string; Notes: string; ServiceID: string; ServiceName: string; Type: string };

describe.each(['consul', 'seed'] as const)('%s dialect', (dialect) => {
  let agent: Agent;
  let c: ReturnType<typeof client>;
  let k: Consul;
  const checks = async () => (await c.get('/v1/agent/checks')).json<Record<string, Check>>();
  /** Enables or disables through the npm client in the consul dialect, over raw HTTP in the seed dialect. */
  const nodeMaint = async (enable: boolean, reason?: string) => {
    if (dialect === 'consul') return void await k.agent.maintenance({ enable, ...(reason ? { reason } : {}) });
    const r = await c.put(`/v1/agent/maintenance?enable=${enable}${reason ? `&reason=${encodeURIComponent(reason)}` : ''}`);
    expect([r.status, r.text]).toEqual([200, '']);
  };
  const serviceMaint = async (id: string, enable: boolean, reason?: string) => {
    if (dialect === 'consul') return void await k.agent.service.maintenance({ id, enable, ...(reason ? { reason } : {}) });
    const r = await c.put(`/v1/agent/service/maintenance/${id}?enable=${enable}${reason ? `&reason=${encodeURIComponent(reason)}` : ''}`);
    expect([r.status, r.text]).toEqual([200, '']);
  };

  beforeAll(async () => {
    agent = await startAgent({ args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });
    c = client(agent);
    k = new Consul({ host: '127.0.0.1', port: Number(new URL(agent.url).port) });
    expect((await c.put('/v1/agent/service/register', { ID: 'web-1', Name: 'web', Tags: ['a'], Port: 80 })).status).toBe(200);
  });
  afterAll(async () => { await agent?.stop(); });

  test('node maintenance: the critical _node_maintenance check with the default notes, idempotent, then removed', async () => {
    await nodeMaint(true);
    expect((await checks())._node_maintenance).toMatchObject({
      CheckID: '_node_maintenance', Name: 'Node Maintenance Mode', Status: 'critical', Notes: nodeDefault, ServiceID: '', Type: '',
    });
    // Enabling again keeps the one check and its first reason, as Consul does.
    await nodeMaint(true, 'another reason');
    const all = await checks();
    expect(Object.keys(all).filter((id) => id.startsWith('_node'))).toEqual(['_node_maintenance']);
    expect(all._node_maintenance!.Notes).toBe(nodeDefault);
    await nodeMaint(false);
    expect((await checks())._node_maintenance).toBeUndefined();
    // Disabling what is not enabled is no error.
    await nodeMaint(false);
    await nodeMaint(true, 'kernel upgrade');
    expect((await checks())._node_maintenance!.Notes).toBe('kernel upgrade');
    await nodeMaint(false);
  });

  test('service maintenance: _service_maintenance:<id> carries the service, reason or default notes', async () => {
    await serviceMaint('web-1', true, 'deploying');
    expect((await checks())['_service_maintenance:web-1']).toMatchObject({
      Name: 'Service Maintenance Mode', Status: 'critical', Notes: 'deploying', ServiceID: 'web-1', ServiceName: 'web', Type: '',
    });
    await serviceMaint('web-1', false);
    expect((await checks())['_service_maintenance:web-1']).toBeUndefined();
    await serviceMaint('web-1', true);
    expect((await checks())['_service_maintenance:web-1']!.Notes).toBe(serviceDefault);
    await serviceMaint('web-1', false);
  });

  test('refusals: enable missing or not a bool (400), an unknown service (404)', async () => {
    const missing = await c.put('/v1/agent/maintenance');
    const invalid = await c.put('/v1/agent/maintenance?enable=yes');
    const serviceInvalid = await c.put('/v1/agent/service/maintenance/web-1?enable=');
    const unknown = await c.put('/v1/agent/service/maintenance/nope?enable=true');
    const unknownOff = await c.put('/v1/agent/service/maintenance/nope?enable=false');
    if (dialect === 'consul') {
      expect([missing.status, missing.text]).toEqual([400, 'Missing value for enable']);
      expect([invalid.status, invalid.text]).toEqual([400, 'Invalid value for enable: "yes"']);
      expect([serviceInvalid.status, serviceInvalid.text]).toEqual([400, 'Invalid value for enable: ""']);
      const text = 'Unknown service ID "nope". Ensure that the service ID is passed, not the service name.';
      expect([unknown.status, unknown.text, unknownOff.status]).toEqual([404, text, 404]);
      // The client turns a 404 into its own 'not found' error.
      await expect(k.agent.service.maintenance({ id: 'nope', enable: true })).rejects.toThrow('not found');
    } else {
      expect(expectError(missing, 400, 1008).details).toEqual({ enable: ['Required:must be true or false'] });
      expect(expectError(invalid, 400, 1009).message).toBe('invalid value for enable: "yes"');
      expectError(serviceInvalid, 400, 1009);
      expect(expectError(unknown, 404, 1006).details).toEqual({ serviceId: 'nope' });
      expectError(unknownOff, 404, 1006);
    }
    expect(Object.keys(await checks()).filter((id) => id.startsWith('_'))).toEqual([]);
  });

  test('a node in maintenance leaves ?passing answers and is critical in health; disabling brings it back', async () => {
    const passing = async () => (await c.get('/v1/health/service/web?passing')).json<unknown[]>().length;
    expect(await passing()).toBe(1);
    await nodeMaint(true, 'reboot');
    expect(await passing()).toBe(0);
    const entry = (await c.get('/v1/health/service/web')).json<{ Checks: Check[] }[]>();
    expect(entry[0]!.Checks.map((x) => [x.CheckID, x.Status])).toContainEqual(['_node_maintenance', 'critical']);
    const critical = (await c.get('/v1/health/state/critical')).json<Check[]>();
    expect(critical.map((x) => x.CheckID)).toContain('_node_maintenance');
    await nodeMaint(false);
    expect(await passing()).toBe(1);
  });

  test('an instance in maintenance leaves ?passing answers; deregistering the service removes its check', async () => {
    expect((await c.put('/v1/agent/service/register', { ID: 'web-2', Name: 'web', Port: 81 })).status).toBe(200);
    await serviceMaint('web-2', true);
    const ids = (await c.get('/v1/health/service/web?passing')).json<{ Service: { ID: string } }[]>().map((e) => e.Service.ID);
    expect(ids).toEqual(['web-1']);
    expect((await c.put('/v1/agent/service/deregister/web-2')).status).toBe(200);
    expect((await checks())['_service_maintenance:web-2']).toBeUndefined();
  });

  test('sessions: one on the node survives node maintenance; one listing the maintenance check cannot be made', async () => {
    const id = await c.session({ Name: 'held' });
    await nodeMaint(true);
    expect((await c.get(`/v1/session/info/${id}`)).json<unknown[]>()).toHaveLength(1);
    const bound = await c.put('/v1/session/create', { Checks: ['_node_maintenance'] });
    expect(bound.status).toBe(dialect === 'consul' ? 500 : 400);
    await nodeMaint(false);
  });
});

describe('gRPC health and the stream', () => {
  const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
  type HealthClient = grpc.Client & { check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void };
  let agent: Agent;
  let health: HealthClient;
  beforeAll(async () => {
    agent = await startAgent();
    health = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
    expect((await client(agent).put('/v1/agent/service/register', { ID: 'db-1', Name: 'db', Check: { TTL: '10m', Status: 'passing' } })).status).toBe(200);
  });
  afterAll(async () => { health?.close(); await agent?.stop(); });
  const status = (service: string) => new Promise<string>((res, rej) => health.check({ service }, (err, r) => (err ? rej(err) : res(r!.status))));

  test('a service in maintenance, or its node, is NOT_SERVING until maintenance ends', async () => {
    const c = client(agent);
    expect(await status('db')).toBe('SERVING');
    expect((await c.put('/v1/agent/service/maintenance/db-1?enable=true')).status).toBe(200);
    expect(await status('db')).toBe('NOT_SERVING');
    expect((await c.put('/v1/agent/service/maintenance/db-1?enable=false')).status).toBe(200);
    expect(await status('db')).toBe('SERVING');
    expect((await c.put('/v1/agent/maintenance?enable=true')).status).toBe(200);
    expect(await status('db')).toBe('NOT_SERVING');
    expect((await c.put('/v1/agent/maintenance?enable=false')).status).toBe(200);
    expect(await status('db')).toBe('SERVING');
  });
  test('the stream\'s service_health topic drops an instance in maintenance from passingOnly and brings it back', async () => {
    const c = client(agent);
    const s = await Stream.open(agent);
    try {
      const passing = await subscribe(s, { id: 'p', topic: 'service_health', key: 'db', filter: { passingOnly: true } });
      expect(passing.keys).toEqual(['node1/db-1']);
      const from = s.mark;
      expect((await c.put('/v1/agent/service/maintenance/db-1?enable=true')).status).toBe(200);
      expect(await s.next(from, (m) => m.id === 'p' && m.type === 'event', 'the delete')).toMatchObject({ op: 'delete', key: 'node1/db-1' });
      const back = s.mark;
      expect((await c.put('/v1/agent/service/maintenance/db-1?enable=false')).status).toBe(200);
      expect(await s.next(back, (m) => m.id === 'p' && m.type === 'event', 'the upsert')).toMatchObject({ op: 'upsert', key: 'node1/db-1' });
    } finally {
      s.ws.terminate();
    }
  });
});

describe('a started process with authentication', () => {
  const secret = 'a-test-secret-that-is-long-enough-0123456789';
  const authority = new TokenAuthority({ secret });
  const bearer = async (rules: Rule[]) => ({ authorization: `Bearer ${await authority.mint({ subject: 'tester', rules, ttlSeconds: 600 })}` });
  let dataDir: string;
  let configFile: string;
  let agent: ProcessAgent | undefined;

  beforeAll(async () => {
    dataDir = tempDataDir();
    configFile = join(dataDir, 'agent.json');
    writeFileSync(configFile, JSON.stringify({
      auth: { jwt_secret: secret, app_keys: {} },
      services: [{ ID: 'api-1', Name: 'api', Port: 9000, Check: { TTL: '1h' } }],
    }));
    agent = await startProcess({ dataDir, args: ['--config-file', configFile] });
  });
  afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

  test('node maintenance needs write on the node, service maintenance write on the service name', async () => {
    const reader = await bearer([{ resource: 'node', prefix: '', access: 'read' }, { resource: 'service', prefix: '', access: 'read' }]);
    const otherNode = await bearer([{ resource: 'node', prefix: 'other', access: 'write' }]);
    const nodeWriter = await bearer([{ resource: 'node', prefix: 'node1', access: 'write' }]);
    const serviceWriter = await bearer([{ resource: 'service', prefix: 'api', access: 'write' }]);
    expect((await call(agent!.url, 'PUT', '/v1/agent/maintenance?enable=true', undefined, reader)).status).toBe(403);
    expect((await call(agent!.url, 'PUT', '/v1/agent/maintenance?enable=true', undefined, otherNode)).status).toBe(403);
    // A token that may not read the service is told what an unknown id is told; one that may read it, 403.
    expect((await call(agent!.url, 'PUT', '/v1/agent/service/maintenance/api-1?enable=true', undefined, nodeWriter)).status).toBe(404);
    expect((await call(agent!.url, 'PUT', '/v1/agent/service/maintenance/api-1?enable=true', undefined, reader)).status).toBe(403);
    expect((await call(agent!.url, 'PUT', '/v1/agent/maintenance?enable=true&reason=r1', undefined, nodeWriter)).status).toBe(200);
    expect((await call(agent!.url, 'PUT', '/v1/agent/service/maintenance/api-1?enable=true&reason=r2', undefined, serviceWriter)).status).toBe(200);
  });

  test('both maintenance checks survive a restart (the config file re-registers the service)', async () => {
    await agent!.stop();
    agent = await startProcess({ dataDir, args: ['--config-file', configFile] });
    const reader = await bearer([{ resource: 'check', prefix: '', access: 'read' }]);
    const all = (await call(agent.url, 'GET', '/v1/agent/checks', undefined, reader)).json<Record<string, Check>>();
    expect(all._node_maintenance).toMatchObject({ Status: 'critical', Notes: 'r1' });
    expect(all['_service_maintenance:api-1']).toMatchObject({ Status: 'critical', Notes: 'r2', ServiceID: 'api-1' });
  });
});
