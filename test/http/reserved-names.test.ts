// Goal: a name a client chooses is an entry like any other, whatever it is called. A service, check, tagged
// address, node meta key or check header named `__proto__` (the one key a plain JavaScript object treats
// as its prototype), `constructor` or `toString` is listed by every answer keyed by names, and is sent by
// an HTTP check, on a started agent.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, sleep, type Agent } from '../support/agent.ts';

const names = ['__proto__', 'constructor', 'toString'];
const json = { 'content-type': 'application/json' };

/** An object with these own keys, as JSON text: `{ __proto__: … }` in JavaScript would set a prototype. */
const objectText = (entries: Array<[string, unknown]>) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;

let agent: Agent;
const put = async (path: string, body: string) => {
  const r = await call(agent.url, 'PUT', path, body, json);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
};
const getObject = async (path: string): Promise<Record<string, unknown>> => {
  const r = await call(agent.url, 'GET', path);
  expect(r.status, r.text).toBe(200);
  return JSON.parse(r.text) as Record<string, unknown>;
};
const ownKeys = (o: unknown) => Object.keys(o as object).sort();

beforeAll(async () => { agent = await startAgent(); });
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('names that are also properties of a JavaScript object', () => {
  beforeAll(async () => {
    for (const name of names) {
      const meta = objectText([['__proto__', `m-${name}`], ['constructor', 'c']]);
      const tagged = objectText([['__proto__', { Address: '10.0.0.1', Port: 1 }], ['lan', { Address: '10.0.0.2', Port: 2 }]]);
      await put('/v1/agent/service/register', `{"Name":${JSON.stringify(name)},"ID":${JSON.stringify(name)},"Meta":${meta},"TaggedAddresses":${tagged},"Check":{"CheckID":${JSON.stringify(`svc-${name}`)},"TTL":"10m","Status":"passing"}}`);
      await put('/v1/agent/check/register', `{"Name":"node check","CheckID":${JSON.stringify(name)},"TTL":"10m"}`);
    }
  });

  test('agent services and agent checks list each of them, keyed by its ID', async () => {
    const services = await getObject('/v1/agent/services');
    expect(ownKeys(services)).toEqual([...names].sort());
    for (const name of names) {
      const service = Object.getOwnPropertyDescriptor(services, name)?.value as { ID: string; Meta: object; TaggedAddresses: object };
      expect(service.ID).toBe(name);
      expect(ownKeys(service.Meta)).toEqual(['__proto__', 'constructor']);
      expect(Object.getOwnPropertyDescriptor(service.Meta, '__proto__')?.value).toBe(`m-${name}`);
      expect(ownKeys(service.TaggedAddresses)).toEqual(['__proto__', 'lan']);
    }
    const checks = await getObject('/v1/agent/checks');
    expect(ownKeys(checks)).toEqual([...names, ...names.map((n) => `svc-${n}`)].sort());
    expect((Object.getOwnPropertyDescriptor(checks, '__proto__')?.value as { CheckID: string }).CheckID).toBe('__proto__');
  });

  test('the filtered listings keep them too', async () => {
    const services = await getObject(`/v1/agent/services?filter=${encodeURIComponent('Meta.constructor == "c"')}`);
    expect(ownKeys(services)).toEqual([...names].sort());
    const checks = await getObject(`/v1/agent/checks?filter=${encodeURIComponent('Name == "node check"')}`);
    expect(ownKeys(checks)).toEqual([...names].sort());
  });

  test('a node registered through the catalog keeps a meta key named __proto__', async () => {
    await put('/v1/catalog/register', `{"Node":"ext","Address":"10.0.0.9","NodeMeta":${objectText([['__proto__', 'p'], ['rack', 'r1']])}}`);
    const node = (await getObject('/v1/catalog/node/ext')).Node as { Meta: object };
    expect(ownKeys(node.Meta)).toEqual(['__proto__', 'rack']);
    expect(Object.getOwnPropertyDescriptor(node.Meta, '__proto__')?.value).toBe('p');
  });

  test('gRPC List names each service', async () => {
    // The raw answer, not a decoded object: the client library's own map decoding is not under test.
    const { List } = healthService as grpc.ServiceDefinition;
    const list = grpc.makeGenericClientConstructor({ List: { ...List!, responseDeserialize: (bytes: Buffer) => bytes } }, 'Health');
    const client = new list(agent.grpc, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      List(req: object, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
    };
    try {
      const bytes = await new Promise<Buffer>((resolve, reject) => client.List({}, (err, res) => (err ? reject(err) : resolve(res!))));
      for (const name of names) expect(bytes.includes(Buffer.from(name)), name).toBe(true);
    } finally {
      client.close();
    }
  });
});

describe('HTTP check headers', () => {
  let server: Server;
  const seen: IncomingMessage['rawHeaders'][] = [];

  beforeAll(async () => {
    server = createServer((req, res) => { seen.push(req.rawHeaders); res.end('ok'); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('a header the check names __proto__ is sent with the others', async () => {
    const port = (server.address() as AddressInfo).port;
    const header = objectText([['__proto__', ['p']], ['X-Probe', ['x']]]);
    await put('/v1/agent/check/register', `{"Name":"probe","CheckID":"probe","HTTP":"http://127.0.0.1:${port}/","Interval":"1s","Header":${header}}`);
    for (let i = 0; i < 100 && seen.length === 0; i++) await sleep(100);
    const first = seen[0]!;
    const pairs = first.flatMap((v, i) => (i % 2 === 0 ? [[v.toLowerCase(), first[i + 1]]] : []));
    expect(pairs).toContainEqual(['__proto__', 'p']);
    expect(pairs).toContainEqual(['x-probe', 'x']);
  });
});
