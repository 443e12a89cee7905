// Goal: a check definition that could never run as written, or whose probe kinds do not go together, is refused
// when it is registered, on a started agent, in both dialects (seed: 400 naming the field; consul: Consul's 400
// text, or one in its words where Consul has none), and nothing is registered; what Go's client and Consul take
// is still taken. A TTL update's body and a key given twice are read as Go's decoder reads them for Consul.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, expectError, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => {
  // Script checks allowed, so that a script check is judged on its own fields.
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify({ enable_script_checks: true }));
  const args = ['--config-file', file];
  [seed, consul] = await Promise.all([startAgent({ args }), startAgent({ args: [...args, '--dialect', 'consul'] })]);
});
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

const json = { 'content-type': 'application/json' };
/** `body` as an object, or as JSON text (to give a key twice). */
const register = (agent: Agent, body: unknown) => call(agent.url, 'PUT', '/v1/agent/check/register', body, json);
const checks = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, Record<string, unknown>>>();
const http = (id: string, extra: Record<string, unknown>) => ({ ID: id, Name: id, HTTP: 'http://127.0.0.1:1/', Interval: '30s', ...extra });

describe("an HTTP check's Method and Header", () => {
  test.each([
    ['a method with a space', { Method: 'G T' }, 'Method', 'Invalid check: net/http: invalid method "G T"'],
    ['a method with a slash', { Method: 'GET/1' }, 'Method', 'Invalid check: net/http: invalid method "GET/1"'],
    ['a header name with a space', { Header: { 'X Bad': ['1'] } }, 'Header', 'Invalid check: net/http: invalid header field name "X Bad"'],
    ['an empty header name', { Header: { '': ['1'] } }, 'Header', 'Invalid check: net/http: invalid header field name ""'],
    ['a header name with a colon', { Header: { 'X:Y': ['1'] } }, 'Header', 'Invalid check: net/http: invalid header field name "X:Y"'],
    ['a header value with CR LF', { Header: { 'X-Ok': ['a\r\nInjected: 1'] } }, 'Header', 'Invalid check: net/http: invalid header field value for "X-Ok"'],
    ['a header value with NUL', { Header: { 'X-Ok': ['fine', 'a\u0000b'] } }, 'Header', 'Invalid check: net/http: invalid header field value for "X-Ok"'],
    ['a header value with DEL', { Header: { 'X-Ok': ['a\u007f'] } }, 'Header', 'Invalid check: net/http: invalid header field value for "X-Ok"'],
    ['a header value outside ASCII', { Header: { 'X-Name': ['café'] } }, 'Header',
      'Invalid check: header field value for "X-Name" holds a character outside ASCII, which this agent does not send'],
  ])('%s is refused at registration, in both dialects', async (_what, extra, field, consulText) => {
    const id = `bad-${Math.random().toString(36).slice(2, 8)}`;
    const s = await register(seed, http(id, extra));
    const body = expectError(s, 400, 1009);
    expect(Object.keys(body.details)).toEqual([field]);
    expect(body.details[field][0]).toMatch(/^Format:/);
    expect(s.text).not.toContain('Injected');
    const c = await register(consul, http(id, extra));
    expect([c.status, c.text]).toEqual([400, consulText]);
    for (const agent of [seed, consul]) expect(await checks(agent)).not.toHaveProperty(id);
  });

  test('every token method, a tab inside a value and printable ASCII are taken', async () => {
    const extra = { Method: "PURGE-x.1_~!#$%&'*+^`|", Header: { 'X-Ok': ['a\tb', ' !~'], 'x_under.score': [], Host: ['example.test'] } };
    for (const agent of [seed, consul]) {
      const r = await register(agent, http('fine-request', extra));
      expect(r.status, r.text).toBe(200);
      expect(await checks(agent)).toHaveProperty('fine-request');
    }
  });
});

describe('a script check without a command', () => {
  test('Args [] is refused (seed: 400/1008 on Args; consul: no script check, so Consul\'s text for a check without a kind)', async () => {
    for (const args of [{ Args: [] }, { ScriptArgs: [] }, { script_args: [] }]) {
      const body = { ID: 'no-command', Name: 'no command', Interval: '10s', ...args };
      const s = expectError(await register(seed, body), 400, 1008);
      expect(s.details).toEqual({ Args: [expect.stringMatching(/^Required:/)] });
      const c = await register(consul, body);
      expect([c.status, c.text]).toEqual([400, 'Invalid check: TTL must be > 0 for TTL checks']);
    }
    for (const agent of [seed, consul]) expect(await checks(agent)).not.toHaveProperty('no-command');
  });

  test('beside another kind, an empty Args is refused in the seed dialect and ignored in the consul dialect, as by Consul', async () => {
    const body = { ID: 'empty-args-ttl', Name: 'empty args ttl', TTL: '30s', Args: [] };
    expect(expectError(await register(seed, body), 400, 1009).details.Args).toEqual([expect.stringMatching(/^Required:/)]);
    const c = await register(consul, body);
    expect(c.status, c.text).toBe(200);
    expect((await checks(consul))['empty-args-ttl']).toMatchObject({ Type: 'ttl' });
  });
});

describe('probe kinds that do not go together', () => {
  const alias = { AliasService: 'web' };
  const probe = { HTTP: 'http://127.0.0.1:1/' };
  // Consul's CheckType.Validate, in its order: the first rule broken gives the text.
  test.each([
    ['Alias and TTL', { ...alias, TTL: '30s' }, 'TTL', 'TTL must be not be set for Alias checks'],
    ['Alias, HTTP and Interval', { ...alias, ...probe, Interval: '10s' }, 'Interval', 'Interval cannot be set for Alias checks'],
    ['Alias and HTTP without Interval', { ...alias, ...probe }, 'Interval', 'Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks'],
    ['HTTP and TTL without Interval', { ...probe, TTL: '30s' }, 'Interval', 'Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks'],
    ['HTTP, TTL and Interval', { ...probe, TTL: '30s', Interval: '10s' }, 'Interval', 'Interval and TTL cannot both be specified'],
    ['Alias, TTL and Interval', { ...alias, TTL: '30s', Interval: '10s' }, 'Interval', 'Interval and TTL cannot both be specified'],
    ['TCP and Args', { TCP: '127.0.0.1:1', Args: ['true'], Interval: '10s' }, 'check', 'give one probe kind, not tcp and script'],
  ])('%s: consul dialect "Invalid check: …" with Consul\'s text, seed 400/1009 naming the field', async (_what, extra, field, text) => {
    const body = { ID: 'two-kinds', Name: 'two kinds', ...extra };
    const c = await register(consul, body);
    expect([c.status, c.text]).toEqual([400, `Invalid check: ${text}`]);
    const s = expectError(await register(seed, body), 400, 1009);
    expect(s.details[field]).toContain(`${field === 'check' ? 'Conflict' : 'Invalid'}:${text}`);
    for (const agent of [seed, consul]) expect(await checks(agent)).not.toHaveProperty('two-kinds');
  });

  test('an Interval on an alias check alone is taken and never used, as by Consul: the alias follows its target at once', async () => {
    for (const agent of [seed, consul]) {
      const svc = await call(agent.url, 'PUT', '/v1/agent/service/register', { Name: 'aliased', Check: { TTL: '300s', Status: 'warning', Notes: 'n' } });
      expect(svc.status, svc.text).toBe(200);
      const r = await register(agent, { ID: 'alias-interval', Name: 'alias interval', AliasService: 'aliased', Interval: '1h' });
      expect(r.status, r.text).toBe(200);
      // The aliased service's checks (and the node's, which are critical here) decide it within moments, not an hour.
      let check: Record<string, unknown> | undefined;
      for (let deadline = Date.now() + 5000; Date.now() < deadline && !check?.Output; await sleep(100)) check = (await checks(agent))['alias-interval'];
      expect(check).toMatchObject({ Type: 'alias', Interval: '1h0m0s', Output: expect.stringMatching(/^Aliased check ".+" failing: /) });
      expect((await call(agent.url, 'PUT', '/v1/agent/check/deregister/alias-interval')).status).toBe(200);
    }
  });

  test('a TTL of 0s is no TTL, as in Consul: beside HTTP and an Interval the check is an HTTP check', async () => {
    for (const agent of [seed, consul]) {
      const r = await register(agent, { ID: 'zero-ttl', Name: 'zero ttl', ...probe, Interval: '30s', TTL: '0s' });
      expect(r.status, r.text).toBe(200);
      expect((await checks(agent))['zero-ttl']).toMatchObject({ Type: 'http' });
    }
  });
});

describe('failure thresholds', () => {
  const higher = "FailuresBeforeWarning can't be higher than FailuresBeforeCritical";
  test.each([
    ['3 before warning, 2 before critical', { FailuresBeforeWarning: 3, FailuresBeforeCritical: 2 }, 2],
    ['1 before warning, none before critical', { FailuresBeforeWarning: 1 }, 0],
  ])('%s is refused, as by Consul\'s CheckType.Validate: consul its text, seed 400/1009 on FailuresBeforeWarning', async (_what, extra, critical) => {
    const body = { ID: 'thresholds', Name: 'thresholds', TTL: '30s', ...extra };
    const c = await register(consul, body);
    expect([c.status, c.text]).toEqual([400, `Invalid check: ${higher}`]);
    const s = expectError(await register(seed, body), 400, 1009);
    expect(s.details).toEqual({ FailuresBeforeWarning: [`Range:must not be higher than FailuresBeforeCritical (${critical})`] });
    for (const agent of [seed, consul]) expect(await checks(agent)).not.toHaveProperty('thresholds');
  });

  test('it is Consul\'s last rule: a broken kind rule or a negative OutputMaxSize is answered first', async () => {
    const thresholds = { FailuresBeforeWarning: 3, FailuresBeforeCritical: 1 };
    const kind = await register(consul, { ID: 'th-kind', Name: 'k', TTL: '30s', Interval: '10s', ...thresholds });
    expect([kind.status, kind.text]).toEqual([400, 'Invalid check: Interval and TTL cannot both be specified']);
    const size = await register(consul, { ID: 'th-size', Name: 's', TTL: '30s', OutputMaxSize: -1, ...thresholds });
    expect([size.status, size.text]).toEqual([400, 'Invalid check: MaxOutputMaxSize must be positive']);
  });

  test('a check inside a service is refused the same way, and the service with it', async () => {
    const body = { Name: 'th-svc', Check: { TTL: '30s', FailuresBeforeWarning: 2, FailuresBeforeCritical: 1 } };
    const c = await call(consul.url, 'PUT', '/v1/agent/service/register', body);
    expect([c.status, c.text]).toEqual([400, `Invalid check: ${higher}`]);
    expect(expectError(await call(seed.url, 'PUT', '/v1/agent/service/register', body), 400, 1009).details)
      .toEqual({ FailuresBeforeWarning: ['Range:must not be higher than FailuresBeforeCritical (1)'] });
    for (const agent of [seed, consul]) expect((await call(agent.url, 'GET', '/v1/agent/services')).json()).not.toHaveProperty('th-svc');
  });

  test('equal thresholds, and a FailuresBeforeWarning of 0 (which is FailuresBeforeCritical, as in Consul), are taken', async () => {
    for (const agent of [seed, consul]) {
      for (const [id, extra] of [['th-equal', { FailuresBeforeWarning: 2, FailuresBeforeCritical: 2 }], ['th-zero', { FailuresBeforeWarning: 0, FailuresBeforeCritical: 3 }]] as const) {
        const r = await register(agent, { ID: id, Name: id, TTL: '30s', ...extra });
        expect(r.status, r.text).toBe(200);
      }
    }
  });
});

describe('a TTL check update body', () => {
  const update = (agent: Agent, body: unknown) => call(agent.url, 'PUT', '/v1/agent/check/update/upd-ttl', body);
  beforeAll(async () => {
    for (const agent of [seed, consul]) expect((await register(agent, { ID: 'upd-ttl', Name: 'upd ttl', TTL: '300s', Status: 'passing' })).status).toBe(200);
  });
  const status = async (agent: Agent) => (await checks(agent))['upd-ttl'];

  test.each([
    ['a number Status', { Status: 1 }, 'json: cannot unmarshal number into Go struct field checkUpdate.Status of type string'],
    ['a bool Status', { Status: true, Output: 'x' }, 'json: cannot unmarshal bool into Go struct field checkUpdate.Status of type string'],
    ['an object Output', { Status: 'critical', Output: { a: 1 } }, 'json: cannot unmarshal object into Go struct field checkUpdate.Output of type string'],
    ['an array Output before a number Status', { Output: ['x'], Status: 2 }, 'json: cannot unmarshal array into Go struct field checkUpdate.Output of type string'],
  ])('%s is Go\'s decode error in the consul dialect, 400/1009 naming the field in the seed dialect; the check is unchanged', async (_what, body, goError) => {
    const c = await update(consul, body);
    expect([c.status, c.text]).toEqual([400, `Request decode failed: ${goError}`]);
    const s = expectError(await update(seed, body), 400, 1009);
    expect(Object.values(s.details).flat()).toContain('Type:must be a string');
    for (const agent of [seed, consul]) expect(await status(agent)).toMatchObject({ Status: 'passing', Output: '' });
  });

  test('an unknown field is refused as at registration: seed 400/1009 naming it, consul Go\'s decode error; the check is unchanged', async () => {
    for (const [body, field] of [[{ Status: 'critical', Note: 'x' }, 'Note'], [{ status: 'critical', output: 'o', Outputs: 'x' }, 'Outputs']] as const) {
      const s = expectError(await update(seed, body), 400, 1009);
      expect(s.details).toEqual({ [field]: ['Unknown:this field is not part of the definition'] });
      const c = await update(consul, body);
      expect([c.status, c.text]).toEqual([400, `Request decode failed: json: unknown field "${field}"`]);
    }
    // Go reports the first fault in the body.
    const c = await update(consul, { Bogus: 1, Status: 2 });
    expect([c.status, c.text]).toEqual([400, 'Request decode failed: json: unknown field "Bogus"']);
    expect(Object.keys(expectError(await update(seed, { Bogus: 1, Status: 2 }), 400, 1009).details)).toEqual(['Bogus', 'Status']);
    for (const agent of [seed, consul]) expect(await status(agent)).toMatchObject({ Status: 'passing', Output: '' });
  });

  test('a null Output leaves it empty, as Go reads null into a string', async () => {
    for (const agent of [seed, consul]) {
      expect((await update(agent, { Status: 'warning', Output: null })).status).toBe(200);
      expect(await status(agent)).toMatchObject({ Status: 'warning', Output: '' });
      expect((await update(agent, { Status: 'passing' })).status).toBe(200);
    }
  });
});

describe('a field given twice under spellings that differ in case', () => {
  test('the last one wins, as in Go\'s decoder: "TTL":"10s","ttl":"bad" is refused, "TTL":"bad","ttl":"10s" taken', async () => {
    const bad = '{"ID":"twice-ttl","Name":"twice","TTL":"10s","ttl":"bad"}';
    expect(expectError(await register(seed, bad), 400, 1009).details.TTL[0]).toMatch(/^Format:/);
    const c = await register(consul, bad);
    expect([c.status, c.text]).toEqual([400, 'Request decode failed: time: invalid duration "bad"']);
    for (const agent of [seed, consul]) {
      expect(await checks(agent)).not.toHaveProperty('twice-ttl');
      const r = await register(agent, '{"ID":"twice-ttl","Name":"twice","TTL":"bad","Ttl":"20s","ttl":"10s"}');
      expect(r.status, r.text).toBe(200);
    }
  });

  test('of Consul\'s snake_case twins the CamelCase field wins when it holds a value, whatever the order, as in Consul', async () => {
    for (const agent of [seed, consul]) {
      for (const id of ['svc-a', 'svc-b']) {
        expect((await call(agent.url, 'PUT', '/v1/agent/service/register', { Name: id })).status).toBe(200);
      }
      expect((await register(agent, '{"ID":"twin-1","Name":"t","TTL":"30s","service_id":"svc-b","ServiceID":"svc-a"}')).status).toBe(200);
      expect((await register(agent, '{"ID":"twin-2","Name":"t","TTL":"30s","ServiceID":"svc-a","service_id":"svc-b"}')).status).toBe(200);
      expect((await register(agent, '{"ID":"twin-3","Name":"t","TTL":"30s","ServiceID":"","service_id":"svc-b"}')).status).toBe(200);
      const all = await checks(agent);
      expect([all['twin-1']?.ServiceID, all['twin-2']?.ServiceID, all['twin-3']?.ServiceID]).toEqual(['svc-a', 'svc-a', 'svc-b']);
    }
  });

  test('a session body and a service body read the last spelling too', async () => {
    const s = await call(seed.url, 'PUT', '/v1/session/create', '{"TTL":"10s","ttl":"bad"}', json);
    expect(expectError(s, 400, 1009).details).toHaveProperty('TTL');
    const c = await call(consul.url, 'PUT', '/v1/session/create', '{"TTL":"10s","ttl":"bad"}');
    expect([c.status, c.text]).toEqual([500, 'Session TTL \'bad\' invalid: time: invalid duration "bad"']);
    for (const agent of [seed, consul]) {
      const r = await call(agent.url, 'PUT', '/v1/agent/service/register', '{"Name":"first","ID":"twice-svc","name":"last"}', json);
      expect(r.status, r.text).toBe(200);
      const svc = (await call(agent.url, 'GET', '/v1/agent/services')).json()['twice-svc'];
      expect(svc.Service).toBe('last');
    }
  });
});
