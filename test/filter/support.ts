/** What the ?filter= tests share: sample records (a check, a health entry), running a filter, catching its compile error. */
import { expect } from 'vitest';
import { checkSchema, compileFilter, FilterError, type Schema } from '../../src/filter/index.ts';

/** What Consul puts before every filter error. */
export const prefix = 'Failed to create boolean expression evaluator: ';

export function check(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    Node: 'n1', CheckID: 'service:web-1', Name: 'web check', Status: 'passing', Notes: '', Output: '',
    ServiceID: 'web-1', ServiceName: 'web', ServiceTags: ['primary'], Type: 'ttl', Interval: '', Timeout: '',
    ExposedPort: 0, Definition: {}, CreateIndex: 7, ModifyIndex: 9, ...over,
  };
}

export function entry(service: Record<string, unknown> = {}, checks = [check()], node: Record<string, unknown> = {}) {
  return {
    Node: {
      ID: 'id-1', Node: 'n1', Address: '10.0.0.1', Datacenter: 'dc1', TaggedAddresses: { lan: '10.0.0.1' },
      Meta: { rack: 'r1', 'consul-network-segment': '' }, CreateIndex: 1, ModifyIndex: 1, ...node,
    },
    Service: {
      ID: 'web-1', Service: 'web', Tags: ['primary', 'v1'], Address: '', Meta: { env: 'prod' }, Port: 8080,
      Weights: { Passing: 1, Warning: 1 }, EnableTagOverride: false, Proxy: { MeshGateway: {}, Expose: {} },
      Connect: {}, CreateIndex: 3, ModifyIndex: 3, ...service,
    },
    Checks: checks,
  };
}

export function run(expression: string, schema: Schema, record: unknown): boolean {
  return compileFilter(expression, schema)(record);
}

export function compileError(expression: string, schema: Schema = checkSchema): FilterError {
  try {
    compileFilter(expression, schema);
  } catch (error) {
    expect(error).toBeInstanceOf(FilterError);
    return error as FilterError;
  }
  throw new Error(`${JSON.stringify(expression)} compiled`);
}
