/**
 * What the health-api suites share: the record shapes and field orders of consul-compat.md §1.3–1.6, request
 * helpers, and the catalog data set the query and filter suites run on.
 */
import { expect } from 'vitest';
import { client, expectError, type HttpResult } from './agent.ts';

export type Client = ReturnType<typeof client>;

export interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string; ServiceID: string;
  ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string; ExposedPort: number;
  Definition: Record<string, unknown>; CreateIndex: number; ModifyIndex: number;
}
export interface NodeRecord {
  ID: string; Node: string; Address: string; Datacenter: string; TaggedAddresses: Record<string, string>;
  Meta: Record<string, string>; CreateIndex: number; ModifyIndex: number;
}
export interface HealthService {
  ID: string; Service: string; Tags: string[]; Address: string; Meta: Record<string, string> | null; Port?: number;
  Weights: { Passing: number; Warning: number }; EnableTagOverride: boolean; CreateIndex: number; ModifyIndex: number;
}
export interface HealthEntry { Node: NodeRecord; Service: HealthService; Checks: CheckRecord[] }
export interface AgentService {
  Kind?: string; ID: string; Service: string; Tags: string[]; Meta: Record<string, string>; Port: number; Address: string;
  TaggedAddresses?: Record<string, { Address: string; Port: number }>; Weights: { Passing: number; Warning: number };
  EnableTagOverride: boolean; Datacenter: string;
}
export interface CatalogServiceNode {
  ID: string; Node: string; Address: string; ServiceID: string; ServiceName: string; ServiceTags: string[];
  ServiceMeta: Record<string, string>; ServicePort: number;
}

/** consul-compat.md §1.3: the check record's fields, in this order. */
export const checkFieldOrder = [
  'Node', 'CheckID', 'Name', 'Status', 'Notes', 'Output', 'ServiceID', 'ServiceName', 'ServiceTags', 'Type',
  'Interval', 'Timeout', 'ExposedPort', 'Definition', 'CreateIndex', 'ModifyIndex',
];
/** consul-compat.md §1.6: a catalog ServiceNode's fields, in this order. */
export const serviceNodeFieldOrder = [
  'ID', 'Node', 'Address', 'Datacenter', 'TaggedAddresses', 'NodeMeta', 'ServiceKind', 'ServiceID', 'ServiceName',
  'ServiceTags', 'ServiceAddress', 'ServiceWeights', 'ServiceMeta', 'ServicePort', 'ServiceSocketPath',
  'ServiceEnableTagOverride', 'ServiceProxy', 'ServiceConnect', 'ServiceLocality', 'CreateIndex', 'ModifyIndex',
];
/** The same with `ServiceTaggedAddresses`, which Consul sends (after ServiceAddress) when the service has tagged addresses. */
export const serviceNodeFieldOrderTagged = serviceNodeFieldOrder.flatMap((f) => (f === 'ServiceAddress' ? [f, 'ServiceTaggedAddresses'] : [f]));
export const nodeFieldOrder = ['ID', 'Node', 'Address', 'Datacenter', 'TaggedAddresses', 'Meta', 'CreateIndex', 'ModifyIndex'];

/** TTLs long enough that no check lapses while the file runs. */
export const ttl = '10m';
export const evaluatorPrefix = 'Failed to create boolean expression evaluator: ';

/** Storage order of checks (consul-compat.md §0): CheckID compared case-insensitively. */
export function byCheckId(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a < b ? -1 : a > b ? 1 : 0;
}

export const q = (filter: string) => `filter=${encodeURIComponent(filter)}`;

export async function getJson<T = any>(c: Client, path: string): Promise<T> {
  const r = await c.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json<T>();
}

/** A PUT that answers nothing: 200 with an empty body. */
export async function putEmpty(c: Client, path: string, body?: unknown): Promise<void> {
  const r = await c.put(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  expect(r.text).toBe('');
}

export const registerCheck = (c: Client, body: Record<string, unknown>) => putEmpty(c, '/v1/agent/check/register', body);
export const registerService = (c: Client, body: Record<string, unknown>, query = '') => putEmpty(c, `/v1/agent/service/register${query}`, body);
export const agentChecks = (c: Client, filter?: string) => getJson<Record<string, CheckRecord>>(c, `/v1/agent/checks${filter === undefined ? '' : `?${q(filter)}`}`);
export const agentServices = (c: Client, filter?: string) => getJson<Record<string, AgentService>>(c, `/v1/agent/services${filter === undefined ? '' : `?${q(filter)}`}`);

/** 400 code 1009 whose details name one of `fields` (a key equal to it or starting with it); any field when none given. */
export function expectInvalid(r: HttpResult, ...fields: string[]): any {
  const body = expectError(r, 400, 1009);
  expect(body.details, r.text).toBeTypeOf('object');
  const keys = Object.keys(body.details ?? {});
  expect(keys.length, r.text).toBeGreaterThan(0);
  if (fields.length > 0) {
    const named = keys.some((k) => fields.some((f) => k === f || k.startsWith(`${f}.`) || k.startsWith(`${f}[`)));
    expect(named, `details should name ${fields.join(' or ')}: ${r.text}`).toBe(true);
  }
  return body;
}

/** Asserts a filter keeps exactly the records `want` picks from the unfiltered list, and that this is some but not all. */
export function expectSubset<T>(all: T[], filtered: T[], want: (x: T) => boolean, key: (x: T) => string): void {
  const expected = all.filter(want).map(key);
  expect(expected.length, 'the data set should make the filter select something').toBeGreaterThan(0);
  expect(expected.length, 'the data set should make the filter leave something out').toBeLessThan(all.length);
  expect(filtered.map(key)).toEqual(expected);
}

/**
 * The data set the catalog, health-query and filter suites run on: three instances of web on node1 (passing,
 * warning, critical), api (all passing), and two passing node checks whose ids sort around the service checks
 * only when compared without case; node2 (rack r2) and node3 in the catalog. Returns node1's record.
 */
export async function registerDataSet(c: Client): Promise<NodeRecord> {
  await registerService(c, { Name: 'web', Tags: ['v1', 'primary'], Meta: { env: 'prod' }, Port: 8080, Check: { TTL: ttl, Status: 'passing' } });
  await registerService(c, { ID: 'web-2', Name: 'web', Tags: ['v2'], Meta: { env: 'dev' }, Port: 8081, Check: { TTL: ttl, Status: 'warning' } });
  await registerService(c, { ID: 'web-3', Name: 'web', Tags: ['v1', 'canary'], Check: { TTL: ttl } });
  await registerService(c, {
    Name: 'api', Checks: [
      { Name: 'api-1', TTL: ttl, Status: 'passing' }, { Name: 'api-22', TTL: ttl, Status: 'passing' },
      { Name: 'api-x', TTL: ttl, Status: 'passing' }, { Name: 'api-1b', TTL: ttl, Status: 'passing' },
    ],
  });
  await registerCheck(c, { ID: 'mem-check', Name: 'mem', TTL: ttl, Status: 'passing' });
  await registerCheck(c, { ID: 'Zeta-check', Name: 'zeta', TTL: ttl, Status: 'passing' });
  for (const [node, address, meta] of [['node2', '10.0.0.2', { rack: 'r2' }], ['node3', '10.0.0.3', undefined]] as const) {
    const r = await c.put('/v1/catalog/register', { Node: node, Address: address, ...(meta ? { NodeMeta: meta } : {}) });
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toBe(true);
  }
  return (await getJson<{ Node: NodeRecord }>(c, '/v1/catalog/node/node1')).Node;
}
