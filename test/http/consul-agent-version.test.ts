// Goal: what a Consul client sees when it asks a started agent who it is, or probes a path it does not serve.
// The consul dialect reports as its version the Consul release whose API it follows (Config.Version of
// /v1/agent/self, the `consul` service's `version` meta in the catalog and health reads, the members' `build`
// tag), so clients gating features on Consul's version see a current Consul; Roster's own version stays in
// Config.RosterVersion. The seed dialect reports Roster's version. An unknown /v1 path answers as Consul's
// agent does: 404, plain text, no index headers, for OPTIONS too.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { call, client, repoRoot, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
const rosterVersion = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const consulVersion = '1.21.4';
/** A release of the Consul line the dialect follows (spec/consul-compat.md: CE 1.16–1.21). */
const followedConsul = /^1\.(1[6-9]|2[01])\.\d+$/;

const get = async <T = any>(c: Client, path: string): Promise<T> => {
  const r = await c.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json<T>();
};

describe('consul dialect', () => {
  let c: Client;
  let url: string;
  withAgent((a) => { url = a.url; c = client(a); }, { args: ['--dialect', 'consul'] });

  test("/v1/agent/self: Config.Version is the Consul release followed, Config.RosterVersion Roster's own", async () => {
    const self = await get(c, '/v1/agent/self');
    expect(self.Config.Version).toBe(consulVersion);
    expect(self.Config.Version).toMatch(followedConsul);
    expect(self.Config.RosterVersion).toBe(rosterVersion);
  });

  test("the consul service's version meta agrees with Config.Version in every read that shows it", async () => {
    const version = (await get(c, '/v1/agent/self')).Config.Version;
    expect(version).toBe(consulVersion);
    const catalog = await get<{ ServiceMeta: Record<string, string> }[]>(c, '/v1/catalog/service/consul');
    expect(catalog.map((s) => s.ServiceMeta.version)).toEqual([version]);
    const health = await get<{ Service: { Meta: Record<string, string> } }[]>(c, '/v1/health/service/consul');
    expect(health.map((e) => e.Service.Meta.version)).toEqual([version]);
    const node = (await get(c, '/v1/agent/self')).Config.NodeName;
    const services = await get<{ Services: Record<string, { Meta: Record<string, string> }> }>(c, `/v1/catalog/node/${node}`);
    expect(services.Services.consul!.Meta.version).toBe(version);
    const list = await get<{ Services: { Service: string; Meta: Record<string, string> }[] }>(c, `/v1/catalog/node-services/${node}`);
    expect(list.Services.find((s) => s.Service === 'consul')!.Meta.version).toBe(version);
  });

  test("members carry Consul's build tag, <version>:<revision>", async () => {
    const members = await get<{ Tags: Record<string, string> }[]>(c, '/v1/agent/members');
    expect(members.map((m) => m.Tags.build)).toEqual([`${consulVersion}:`]);
  });

  test('an unknown /v1 path is 404 in plain text without index headers, whatever the method', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'OPTIONS']) {
      const r = await call(url, method, '/v1/agent/selfish');
      expect([method, r.status, r.text]).toEqual([method, 404, 'Invalid URL path: not a recognized HTTP API endpoint\n']);
      expect(r.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(r.headers.get('x-consul-index')).toBeNull();
      expect(r.headers.get('allow')).toBeNull();
    }
    const head = await call(url, 'HEAD', '/v1/nope');
    expect([head.status, head.text, head.headers.get('x-consul-index')]).toEqual([404, '', null]);
    const outside = await call(url, 'OPTIONS', '/nope');
    expect([outside.status, outside.text]).toEqual([404, "Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n"]);
    // Consul looks for "/v1/" anywhere in the path.
    expect((await c.get('/x/v1/nope')).text).toBe('Invalid URL path: not a recognized HTTP API endpoint\n');
    // A served path still answers OPTIONS with its methods.
    const served = await call(url, 'OPTIONS', '/v1/agent/self');
    expect([served.status, served.headers.get('allow')]).toEqual([200, 'OPTIONS,GET']);
  });
});

describe('seed dialect', () => {
  let c: Client;
  let url: string;
  withAgent((a) => { url = a.url; c = client(a); });

  test("/v1/agent/self reports Roster's own version in both fields; members have no build tag", async () => {
    const self = await get(c, '/v1/agent/self');
    expect([self.Config.Version, self.Config.RosterVersion]).toEqual([rosterVersion, rosterVersion]);
    const members = await get<{ Tags: Record<string, string> }[]>(c, '/v1/agent/members');
    expect(members.map((m) => m.Tags.build)).toEqual([undefined]);
  });

  test('an unknown path keeps the seed answers: 404/1006 for GET, OPTIONS listing no method', async () => {
    const r = await c.get('/v1/agent/selfish');
    expect([r.status, r.json().code]).toEqual([404, 1006]);
    const options = await call(url, 'OPTIONS', '/v1/agent/selfish');
    expect([options.status, options.headers.get('allow')]).toEqual([200, 'OPTIONS']);
  });
});
