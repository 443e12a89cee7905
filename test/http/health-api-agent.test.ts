// Goal: the agent half of the health API (consul-compat.md §1.3, §1.4): agent checks and services through HTTP,
// with TTL checks so every status is set by the test.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/in-process.ts';
import { type Client, type CheckRecord, checkFieldOrder, ttl, getJson, putEmpty, registerCheck, registerService, agentChecks, agentServices, expectInvalid } from '../support/health-api.ts';

describe('health API on one agent', () => {
  let c: Client;

  withAgent((a) => { c = client(a); });

  test('a fresh agent: /v1/health/state/fail is [] when no check is critical; agent checks and services are empty; gossipHealth passes', async () => {
    expect(await getJson(c, '/v1/health/state/fail')).toEqual([]);
    expect(await getJson(c, '/v1/health/state/critical')).toEqual([]);
    expect(await agentChecks(c)).toEqual({});
    expect(await agentServices(c)).toEqual({});
    const node = await getJson<CheckRecord[]>(c, '/v1/health/node/node1');
    expect(node.map((k) => [k.CheckID, k.Status, k.Type])).toEqual([['gossipHealth', 'passing', '']]);
  });

  // ------------------------------------------------------------------------------------------------ 1. agent checks
  describe('agent checks (§1.3)', () => {
    const nodeChecks: string[] = [];
    const services: string[] = [];

    beforeAll(async () => {
      await registerService(c, { Name: 'chk-host', Tags: ['h1'] });
      services.push('chk-host');
    });

    afterAll(async () => {
      for (const id of nodeChecks) await c.put(`/v1/agent/check/deregister/${encodeURIComponent(id)}`);
      for (const id of services) await c.put(`/v1/agent/service/deregister/${encodeURIComponent(id)}`);
    });

    test('register with Consul names: the record has every field in order, Definition {}, indexes 0, default Status critical', async () => {
      await registerCheck(c, { ID: 'chk-plain', Name: 'plain check', Notes: 'some notes', TTL: ttl });
      nodeChecks.push('chk-plain');
      const r = await c.get('/v1/agent/checks');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const all = r.json<Record<string, CheckRecord>>();
      const rec = all['chk-plain']!;
      expect(Object.keys(rec)).toEqual(checkFieldOrder);
      expect(rec).toEqual({
        Node: 'node1', CheckID: 'chk-plain', Name: 'plain check', Status: 'critical', Notes: 'some notes', Output: '',
        ServiceID: '', ServiceName: '', ServiceTags: [], Type: 'ttl', Interval: '', Timeout: '', ExposedPort: 0,
        Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
      // gossipHealth is a node check of the catalog, not one registered through the agent.
      expect(all).not.toHaveProperty('gossipHealth');
    });

    test('ID defaults to Name; initial Status passing and warning are honoured', async () => {
      await registerCheck(c, { Name: 'chk-named', TTL: ttl, Status: 'passing' });
      await registerCheck(c, { ID: 'chk-warn', Name: 'warn check', TTL: ttl, Status: 'warning' });
      nodeChecks.push('chk-named', 'chk-warn');
      const all = await agentChecks(c);
      expect(all['chk-named']).toMatchObject({ CheckID: 'chk-named', Name: 'chk-named', Status: 'passing' });
      expect(all['chk-warn']).toMatchObject({ CheckID: 'chk-warn', Status: 'warning' });
    });

    test('field names are matched case-insensitively and in snake_case (service_id, deregister_critical_service_after, …)', async () => {
      await registerCheck(c, {
        id: 'chk-snake', NAME: 'snake check', notes: 'n', STATUS: 'warning', service_id: 'chk-host', Ttl: ttl,
        deregister_critical_service_after: '90m', output_max_size: 2048, success_before_passing: 1,
        failures_before_warning: 1, failures_before_critical: 2,
      });
      const rec = (await agentChecks(c))['chk-snake'];
      expect(rec).toMatchObject({
        CheckID: 'chk-snake', Name: 'snake check', Notes: 'n', Status: 'warning', ServiceID: 'chk-host',
        ServiceName: 'chk-host', ServiceTags: ['h1'], Type: 'ttl',
      });
      await registerCheck(c, { checkid: 'chk-lower', name: 'lower', serviceid: 'chk-host', ttl, deregistercriticalserviceafter: '90m' });
      expect((await agentChecks(c))['chk-lower']).toMatchObject({ CheckID: 'chk-lower', ServiceID: 'chk-host', Type: 'ttl' });
    });

    test('every probe kind and its fields are accepted (HTTP, TCP, gRPC, alias), Interval/Timeout shown as Go durations', async () => {
      await registerService(c, { Name: 'kinds-host' });
      await registerService(c, { Name: 'kinds-target' });
      try {
        await registerCheck(c, {
          ID: 'kinds-http', Name: 'kinds http', Notes: 'n', Status: 'warning', ServiceID: 'kinds-host',
          HTTP: 'http://127.0.0.1:1/health', Method: 'POST', Header: { 'X-Test': ['a', 'b'] }, Body: '{"x":1}',
          TLSSkipVerify: true, TLSServerName: 'example.test', DisableRedirects: true, Interval: '30s', Timeout: '2s',
          DeregisterCriticalServiceAfter: '90m', SuccessBeforePassing: 2, FailuresBeforeWarning: 1,
          FailuresBeforeCritical: 3, OutputMaxSize: 1024,
        });
        await registerCheck(c, {
          id: 'kinds-http2', name: 'kinds http snake', service_id: 'kinds-host', http: 'https://127.0.0.1:1/',
          tls_skip_verify: true, tls_server_name: 'example.test', disable_redirects: true, interval: '1m30s', timeout: '1500ms',
        });
        await registerCheck(c, { ID: 'kinds-tcp', Name: 'kinds tcp', ServiceID: 'kinds-host', TCP: '127.0.0.1:1', Interval: '30s' });
        await registerCheck(c, { ID: 'kinds-grpc', Name: 'kinds grpc', ServiceID: 'kinds-host', GRPC: '127.0.0.1:1/svc', GRPCUseTLS: true, Interval: '30s' });
        await registerCheck(c, { id: 'kinds-grpc2', name: 'kinds grpc snake', service_id: 'kinds-host', grpc: '127.0.0.1:1', grpc_use_tls: false, interval: '30s' });
        await registerCheck(c, { ID: 'kinds-alias', Name: 'kinds alias', ServiceID: 'kinds-host', AliasService: 'kinds-target', AliasNode: 'node1' });
        await registerCheck(c, { id: 'kinds-alias2', name: 'kinds alias snake', service_id: 'kinds-host', alias_service: 'kinds-target', alias_node: 'node1' });
        const all = await agentChecks(c);
        expect(all['kinds-http']).toMatchObject({ Type: 'http', Interval: '30s', Timeout: '2s', Notes: 'n', ServiceID: 'kinds-host', ServiceName: 'kinds-host' });
        // The probe may already have run (first run at a random point of the interval): warning as given, or its result.
        expect(['warning', 'critical']).toContain(all['kinds-http']!.Status);
        expect(all['kinds-http2']).toMatchObject({ Type: 'http', Interval: '1m30s', Timeout: '1.5s' });
        expect(all['kinds-tcp']).toMatchObject({ Type: 'tcp', Interval: '30s' });
        expect(all['kinds-grpc']).toMatchObject({ Type: 'grpc', Interval: '30s' });
        expect(all['kinds-grpc2']).toMatchObject({ Type: 'grpc' });
        expect(all['kinds-alias']).toMatchObject({ Type: 'alias', Interval: '' });
        expect(all['kinds-alias2']).toMatchObject({ Type: 'alias' });
        // TTL updates are for TTL checks only.
        expectInvalid(await c.put('/v1/agent/check/pass/kinds-tcp'));
      } finally {
        await c.put('/v1/agent/service/deregister/kinds-host');
        await c.put('/v1/agent/service/deregister/kinds-target');
      }
      const left = Object.keys(await agentChecks(c)).filter((id) => id.startsWith('kinds-'));
      expect(left).toEqual([]);
    });

    test('re-registering a check id keeps its current Status and Output, takes the new Name and Notes', async () => {
      await registerCheck(c, { ID: 'chk-re', Name: 're check', Notes: 'first', TTL: ttl });
      nodeChecks.push('chk-re');
      await putEmpty(c, '/v1/agent/check/pass/chk-re?note=all%20good');
      await registerCheck(c, { ID: 'chk-re', Name: 're check 2', Notes: 'second', TTL: ttl, Status: 'critical' });
      expect((await agentChecks(c))['chk-re']).toMatchObject({ Name: 're check 2', Notes: 'second', Status: 'passing', Output: 'all good' });
    });

    test('pass/warn/fail with ?note set Status and Output (Notes untouched); update sets both from the body', async () => {
      await registerCheck(c, { ID: 'chk-ttl', Name: 'ttl check', Notes: 'keep me', TTL: ttl });
      nodeChecks.push('chk-ttl');
      const cases: [string, string][] = [['pass', 'passing'], ['warn', 'warning'], ['fail', 'critical']];
      for (const [verb, status] of cases) {
        await putEmpty(c, `/v1/agent/check/${verb}/chk-ttl?note=${verb}-note`);
        expect((await agentChecks(c))['chk-ttl']).toMatchObject({ Status: status, Output: `${verb}-note`, Notes: 'keep me' });
      }
      await putEmpty(c, '/v1/agent/check/update/chk-ttl', { Status: 'warning', Output: 'via update' });
      expect((await agentChecks(c))['chk-ttl']).toMatchObject({ Status: 'warning', Output: 'via update' });
    });

    test('update with a bad Status → 400 1009 naming Status, and the check is unchanged', async () => {
      await registerCheck(c, { ID: 'chk-upd', Name: 'upd', TTL: ttl, Status: 'passing' });
      nodeChecks.push('chk-upd');
      expectInvalid(await c.put('/v1/agent/check/update/chk-upd', { Status: 'sideways', Output: 'x' }), 'Status');
      expect((await agentChecks(c))['chk-upd']).toMatchObject({ Status: 'passing', Output: '' });
    });

    test('TTL output over 4096 bytes keeps the first 4096 + " ... (captured 4096 of N bytes)" (note and update)', async () => {
      await registerCheck(c, { ID: 'chk-big', Name: 'big', TTL: ttl });
      nodeChecks.push('chk-big');
      const note = 'a'.repeat(4096) + 'b'.repeat(904);
      const expected = `${'a'.repeat(4096)} ... (captured 4096 of 5000 bytes)`;
      await putEmpty(c, `/v1/agent/check/warn/chk-big?note=${note}`);
      expect((await agentChecks(c))['chk-big']).toMatchObject({ Status: 'warning', Output: expected });
      await putEmpty(c, '/v1/agent/check/update/chk-big', { Status: 'passing', Output: note });
      expect((await agentChecks(c))['chk-big']).toMatchObject({ Status: 'passing', Output: expected });
      await putEmpty(c, '/v1/agent/check/pass/chk-big?note=short');
      expect((await agentChecks(c))['chk-big']!.Output).toBe('short');
    });

    test('deregister removes the check (200, empty body); a second deregister is 404 1006', async () => {
      await registerCheck(c, { ID: 'chk-gone', Name: 'gone', TTL: ttl });
      expect(await agentChecks(c)).toHaveProperty('chk-gone');
      await putEmpty(c, '/v1/agent/check/deregister/chk-gone');
      expect(await agentChecks(c)).not.toHaveProperty('chk-gone');
      expect((await getJson<CheckRecord[]>(c, '/v1/health/node/node1')).map((k) => k.CheckID)).not.toContain('chk-gone');
      expectError(await c.put('/v1/agent/check/deregister/chk-gone'), 404, 1006);
    });

    test('an unknown check id is 404 1006 on deregister, pass, warn, fail and update', async () => {
      for (const verb of ['deregister', 'pass', 'warn', 'fail']) {
        expectError(await c.put(`/v1/agent/check/${verb}/no-such-check`), 404, 1006);
      }
      expectError(await c.put('/v1/agent/check/update/no-such-check', { Status: 'passing' }), 404, 1006);
    });

    test('validation errors → 400 1009 with details naming the field; a missing Name alone → 400 1008', async () => {
      const missing = expectError(await c.put('/v1/agent/check/register', { ID: 'v0', TTL: ttl }), 400, 1008);
      expect(missing.details).toEqual({ Name: ['Required:a check needs a name'] });
      const cases: [string, Record<string, unknown>, string[]][] = [
        ['unknown field', { Name: 'v1', TTL: ttl, Script: 'echo hi' }, ['Script']],
        ['bad Status', { Name: 'v2', TTL: ttl, Status: 'sideways' }, ['Status']],
        ['Interval with TTL', { Name: 'v3', TTL: ttl, Interval: '10s' }, ['Interval', 'TTL']],
        ['HTTP without Interval', { Name: 'v4', HTTP: 'http://127.0.0.1:1/' }, ['Interval']],
        ['TCP without Interval', { Name: 'v5', TCP: '127.0.0.1:1' }, ['Interval']],
        ['GRPC without Interval', { Name: 'v6', GRPC: '127.0.0.1:1' }, ['Interval']],
        ['Args without Interval', { Name: 'v7', Args: ['true'] }, ['Interval']],
        ['no kind', { Name: 'v9' }, []],
        ['non-http(s) URL', { Name: 'v10', HTTP: 'ftp://127.0.0.1/x', Interval: '10s' }, ['HTTP']],
        ['bad TTL duration', { Name: 'v11', TTL: 'abc' }, ['TTL']],
      ];
      for (const [what, body, fields] of cases) {
        const r = await c.put('/v1/agent/check/register', body);
        expect(r.status, `${what}: ${r.text}`).toBe(400);
        expectInvalid(r, ...fields);
      }
      const left = Object.keys(await agentChecks(c)).filter((id) => /^v\d+$/.test(id));
      expect(left).toEqual([]);
    });

    test('an unknown ServiceID → 404 1006', async () => {
      expectError(await c.put('/v1/agent/check/register', { Name: 'orphan', TTL: ttl, ServiceID: 'no-such-service' }), 404, 1006);
      expect(await agentChecks(c)).not.toHaveProperty('orphan');
    });

    test('script and container checks without enable_script_checks → 403 1004', async () => {
      expectError(await c.put('/v1/agent/check/register', { Name: 'script', Args: ['true'], Interval: '10s' }), 403, 1004);
      expectError(await c.put('/v1/agent/check/register', { Name: 'docker', Args: ['true'], DockerContainerID: 'abc', Interval: '10s' }), 403, 1004);
      expectError(await c.put('/v1/agent/check/register', { Name: 'runtime', Args: ['true'], RuntimeContainerID: 'abc', Shell: '/bin/sh', Interval: '10s' }), 403, 1004);
      const all = await agentChecks(c);
      for (const id of ['script', 'docker', 'runtime']) expect(all).not.toHaveProperty(id);
    });
  });

  // ------------------------------------------------------------------------------------------------ 2. agent services
  describe('agent services (§1.4)', () => {
    const services: string[] = [];

    afterAll(async () => {
      for (const id of services) await c.put(`/v1/agent/service/deregister/${encodeURIComponent(id)}`);
    });

    test('register with every field: /v1/agent/services shows it; minimal service gets ID = Name, Tags [], Meta {}, Weights 1/1', async () => {
      await registerService(c, {
        ID: 'svc-full-1', Name: 'svc-full', Tags: ['b', 'a'], Address: '10.1.1.1', Port: 8080, Meta: { env: 'test' },
        TaggedAddresses: { lan: { Address: '10.1.1.1', Port: 8080 }, wan: { Address: '198.51.100.1', Port: 80 } },
        EnableTagOverride: true, Weights: { Passing: 3, Warning: 2 },
      });
      await registerService(c, { Name: 'svc-min' });
      await registerService(c, { Name: 'svc-gw', Kind: 'mesh-gateway', Port: 8443 });
      services.push('svc-full-1', 'svc-min', 'svc-gw');
      const all = await agentServices(c);
      expect(all['svc-full-1']).toEqual({
        ID: 'svc-full-1', Service: 'svc-full', Tags: ['b', 'a'], Meta: { env: 'test' }, Port: 8080, Address: '10.1.1.1',
        TaggedAddresses: { lan: { Address: '10.1.1.1', Port: 8080 }, wan: { Address: '198.51.100.1', Port: 80 } },
        Weights: { Passing: 3, Warning: 2 }, EnableTagOverride: true, Datacenter: 'dc1',
      });
      expect(all['svc-min']).toEqual({
        ID: 'svc-min', Service: 'svc-min', Tags: [], Meta: {}, Port: 0, Address: '', Weights: { Passing: 1, Warning: 1 },
        EnableTagOverride: false, Datacenter: 'dc1',
      });
      expect(all['svc-gw']).toMatchObject({ Kind: 'mesh-gateway', ID: 'svc-gw', Port: 8443 });
    });

    test('service field names are matched case-insensitively', async () => {
      await registerService(c, { name: 'svc-lower', id: 'svc-lower-1', tags: ['x'], port: 1234, meta: { k: 'v' }, enable_tag_override: true });
      services.push('svc-lower-1');
      expect((await agentServices(c))['svc-lower-1']).toMatchObject({ Service: 'svc-lower', Tags: ['x'], Port: 1234, Meta: { k: 'v' }, EnableTagOverride: true });
    });

    test('an embedded Check gets CheckID service:<id> and Name "Service \'<name>\' check", with ServiceName and ServiceTags', async () => {
      await registerService(c, { ID: 'svc-emb-1', Name: 'svc-emb', Tags: ['t1'], Check: { TTL: ttl } });
      services.push('svc-emb-1');
      const rec = (await agentChecks(c))['service:svc-emb-1'];
      expect(rec).toEqual({
        Node: 'node1', CheckID: 'service:svc-emb-1', Name: "Service 'svc-emb' check", Status: 'critical', Notes: '', Output: '',
        ServiceID: 'svc-emb-1', ServiceName: 'svc-emb', ServiceTags: ['t1'], Type: 'ttl', Interval: '', Timeout: '',
        ExposedPort: 0, Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
    });

    test('several Checks without ids get service:<id>:1, :2 …; explicit ids and names are kept', async () => {
      await registerService(c, { Name: 'svc-multi', Checks: [{ TTL: ttl }, { TTL: ttl, Status: 'passing' }, { CheckID: 'svc-multi-own', Name: 'own', TTL: ttl }] });
      services.push('svc-multi');
      const all = await agentChecks(c);
      expect(all['service:svc-multi:1']).toMatchObject({ Name: "Service 'svc-multi' check", ServiceID: 'svc-multi', Status: 'critical' });
      expect(all['service:svc-multi:2']).toMatchObject({ Name: "Service 'svc-multi' check", ServiceID: 'svc-multi', Status: 'passing' });
      expect(all['svc-multi-own']).toMatchObject({ Name: 'own', ServiceID: 'svc-multi' });
      expect(all).not.toHaveProperty('service:svc-multi');
    });

    test('re-registration keeps unlisted checks; ?replace-existing-checks drops them and keeps the listed one\'s status', async () => {
      const checks = [{ CheckID: 'rep-a', Name: 'a', TTL: ttl }, { CheckID: 'rep-b', Name: 'b', TTL: ttl }];
      await registerService(c, { Name: 'svc-rep', Checks: checks });
      services.push('svc-rep');
      await putEmpty(c, '/v1/agent/check/pass/rep-a');
      await registerService(c, { Name: 'svc-rep', Check: checks[0] });
      let all = await agentChecks(c);
      expect(all).toHaveProperty('rep-a');
      expect(all).toHaveProperty('rep-b');
      await registerService(c, { Name: 'svc-rep', Check: checks[0] }, '?replace-existing-checks');
      all = await agentChecks(c);
      expect(all['rep-a']).toMatchObject({ Status: 'passing', ServiceID: 'svc-rep' });
      expect(all).not.toHaveProperty('rep-b');
    });

    test('service checks follow a tag change on re-registration (embedded and separately registered checks)', async () => {
      await registerService(c, { Name: 'svc-tags', Tags: ['old'], Check: { TTL: ttl } });
      services.push('svc-tags');
      await registerCheck(c, { ID: 'svc-tags-extra', Name: 'extra', ServiceID: 'svc-tags', TTL: ttl });
      let all = await agentChecks(c);
      expect(all['service:svc-tags']!.ServiceTags).toEqual(['old']);
      expect(all['svc-tags-extra']!.ServiceTags).toEqual(['old']);
      await registerService(c, { Name: 'svc-tags', Tags: ['new', 'newer'], Check: { TTL: ttl } });
      all = await agentChecks(c);
      expect(all['service:svc-tags']!.ServiceTags).toEqual(['new', 'newer']);
      expect(all['svc-tags-extra']!.ServiceTags).toEqual(['new', 'newer']);
      const viaHealth = await getJson<CheckRecord[]>(c, '/v1/health/checks/svc-tags');
      expect(viaHealth.map((k) => [k.CheckID, k.ServiceTags])).toEqual([['service:svc-tags', ['new', 'newer']], ['svc-tags-extra', ['new', 'newer']]]);
    });

    test('deregister removes the service and all its checks; unknown id → 404 1006', async () => {
      await registerService(c, { Name: 'svc-dereg', Checks: [{ TTL: ttl }, { TTL: ttl }] });
      await registerCheck(c, { ID: 'svc-dereg-extra', Name: 'extra', ServiceID: 'svc-dereg', TTL: ttl });
      expect(Object.keys(await agentChecks(c)).filter((id) => id.includes('svc-dereg'))).toHaveLength(3);
      await putEmpty(c, '/v1/agent/service/deregister/svc-dereg');
      expect(await agentServices(c)).not.toHaveProperty('svc-dereg');
      expect(Object.keys(await agentChecks(c)).filter((id) => id.includes('svc-dereg'))).toEqual([]);
      expect(await getJson(c, '/v1/health/checks/svc-dereg')).toEqual([]);
      expectError(await c.put('/v1/agent/service/deregister/svc-dereg'), 404, 1006);
      expectError(await c.put('/v1/agent/service/deregister/no-such-service'), 404, 1006);
    });

    test('validation errors → 400 1009 (Address 0.0.0.0, Weights.Passing 0, a bad check inside), a missing Name → 400 1008; nothing registered', async () => {
      expect(expectError(await c.put('/v1/agent/service/register', { ID: 'bad-noname', Port: 1 }), 400, 1008).details).toEqual({ Name: ['Required:a service needs a name'] });
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-addr', Address: '0.0.0.0' }), 'Address');
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-weights', Weights: { Passing: 0, Warning: 1 } }), 'Weights');
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-check', Check: { TTL: ttl, Interval: '10s' } }));
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-checks', Checks: [{ TTL: ttl }, { TTL: ttl, Status: 'sideways' }] }));
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-field', Bogus: 1 }), 'Bogus');
      const all = await agentServices(c);
      for (const id of ['bad-noname', 'bad-addr', 'bad-weights', 'bad-check', 'bad-checks', 'bad-field']) expect(all).not.toHaveProperty(id);
    });
  });

  // ------------------------------------------------------------------------------- 3–5. catalog, health, filters
});
