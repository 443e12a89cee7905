// Goal: a service's Weights and Meta are held to Consul's bounds, its Port to 0–65535, and integers to the exact
// ones, on a started agent, in both dialects — a weight Go clients could not decode (1e300), a port no socket
// has or metadata Consul refuses never enters the catalog, the refusal names the rule (seed: 400/1009 with the
// field; consul: Consul's 400 text, or Roster's own where Consul has none), nothing is registered, and the
// largest values inside the bounds are taken.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

const register = (agent: Agent, body: string) => call(agent.url, 'PUT', '/v1/agent/service/register', body, { 'content-type': 'application/json' });
const meta = (entries: Array<[string, string]>) => JSON.stringify(Object.fromEntries(entries));
const pairs = (n: number) => Array.from({ length: n }, (_, i): [string, string] => [`k${i}`, 'v']);

const refused: Array<[string, string, string, string]> = [
  ['a weight past a Go int', '"Weights":{"Passing":1e300,"Warning":1}', 'Weights', 'Invalid Weights: DNS Weight must be between 0 and 65535'],
  ['a passing weight past 65535', '"Weights":{"Passing":65536,"Warning":1}', 'Weights', 'Invalid Weights: DNS Weight must be between 0 and 65535'],
  ['a warning weight past 65535', '"Weights":{"Passing":1,"Warning":65536}', 'Weights', 'Invalid Weights: DNS Weight must be between 0 and 65535'],
  ['a passing weight of 0', '"Weights":{"Passing":0,"Warning":1}', 'Weights', 'Invalid Weights: Passing must be greater than 0'],
  ['a negative warning weight', '"Weights":{"Passing":1,"Warning":-1}', 'Weights', 'Invalid Weights: Warning must be greater or equal than 0'],
  ['a port past 65535', '"Port":65536', 'Port', 'Request decode failed: invalid Port'],
  ['a negative port', '"Port":-1', 'Port', 'Request decode failed: invalid Port'],
  ['a failure threshold past the exact integers', '"Check":{"TTL":"30s","FailuresBeforeCritical":1e300}', 'FailuresBeforeCritical', 'Request decode failed: invalid FailuresBeforeCritical'],
  ['a blank meta key', `"Meta":${meta([['', 'x']])}`, 'Meta', "Invalid Service Meta: Couldn't load metadata pair ('', 'x'): Key cannot be blank"],
  ['a meta key with a dot', `"Meta":${meta([['a.b', 'x']])}`, 'Meta', "Invalid Service Meta: Couldn't load metadata pair ('a.b', 'x'): Key contains invalid characters"],
  ['a meta key of 129 characters', `"Meta":${meta([['k'.repeat(129), 'x']])}`, 'Meta', `Invalid Service Meta: Couldn't load metadata pair ('${'k'.repeat(129)}', 'x'): Key is too long (limit: 128 characters)`],
  ['a reserved meta key', `"Meta":${meta([['consul-version', 'x']])}`, 'Meta', "Invalid Service Meta: Couldn't load metadata pair ('consul-version', 'x'): Key prefix 'consul-' is reserved for internal use"],
  ['a meta value of 513 bytes', `"Meta":${meta([['k', 'é'.repeat(256) + 'v']])}`, 'Meta', `Invalid Service Meta: Couldn't load metadata pair ('k', '${'é'.repeat(256)}v'): Value is too long (limit: 512 characters)`],
  ['65 meta pairs', `"Meta":${meta(pairs(65))}`, 'Meta', 'Invalid Service Meta: Node metadata cannot contain more than 64 key/value pairs'],
];

describe('service Weights and Meta', () => {
  test.each(refused)('%s is refused in both dialects, and nothing is registered', async (_what, field, name, consulText) => {
    const body = `{"Name":"bounded","ID":"bounded",${field}}`;
    const s = await register(seed, body);
    expect(s.status, s.text).toBe(400);
    expect(s.json()).toMatchObject({ code: 1009, details: { [name]: [expect.stringMatching(/^(Invalid|Range):/)] } });
    const c = await register(consul, body);
    expect([c.status, c.text]).toEqual([400, consulText]);
    for (const agent of [seed, consul]) {
      expect((await call(agent.url, 'GET', '/v1/agent/services')).json()).not.toHaveProperty('bounded');
    }
  });

  test('the largest values inside the bounds are taken and listed as given', async () => {
    const value = 'é'.repeat(256);
    const entries: Array<[string, string]> = [...pairs(62), ['k'.repeat(128), value], ['Under_score-dash', '']];
    const body = `{"Name":"edge","ID":"edge","Port":65535,"Weights":{"Passing":65535,"Warning":0},"Meta":${meta(entries)}}`;
    for (const agent of [seed, consul]) {
      const r = await register(agent, body);
      expect(r.status, r.text).toBe(200);
      const edge = (await call(agent.url, 'GET', '/v1/agent/services')).json().edge;
      expect(edge.Port).toBe(65535);
      expect(edge.Weights).toEqual({ Passing: 65535, Warning: 0 });
      expect(edge.Meta).toEqual(Object.fromEntries(entries));
    }
  });
});
