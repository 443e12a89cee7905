// Goal: agent checks (consul-compat.md §1.3) run once per dialect — through the real npm `consul` 2.0.1 client
// against `--dialect consul` and over raw HTTP against the seed dialect — so the two renderings cannot drift apart.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Client, type Driver, ttl, unknownCheck, scriptsDisabled, type Failure, expectFailure, deregisterUnknown, dialects, consulHealthSuite } from '../support/consul-health.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  let k: Consul;
  let d: Driver;
  const removeAll = consulHealthSuite(dialect, (s) => ({ c, k, d } = s));

  describe('1. agent checks (§1.3)', () => {
    const made = ['ac-ttl', 'ac-http', 'ac-tcp', 'ac-raw', 'ac-upd'];
    afterAll(() => removeAll(made, []));

    test('agent.check.register: ttl, http and tcp definitions are accepted; agent.checks() shows the record and its Type', async () => {
      await d.registerCheck({ ID: 'ac-ttl', Name: 'ac ttl', Notes: 'ttl notes', TTL: ttl });
      // Closed port: only the registration, the record's shape and Type are asserted, never a probe result.
      await d.registerCheck({
        ID: 'ac-http', Name: 'ac http', HTTP: 'http://127.0.0.1:1/health', Method: 'POST', Header: { 'X-Test': ['a'] },
        Body: '{}', TLSSkipVerify: true, Interval: '30s', Timeout: '2s',
      });
      await d.registerCheck({ ID: 'ac-tcp', Name: 'ac tcp', TCP: '127.0.0.1:1', Interval: '1m30s' });
      const all = await d.checks();
      expect(Object.keys(all).sort()).toEqual(['ac-http', 'ac-tcp', 'ac-ttl']);
      expect(all['ac-ttl']).toEqual({
        Node: 'node1', CheckID: 'ac-ttl', Name: 'ac ttl', Status: 'critical', Notes: 'ttl notes', Output: '',
        ServiceID: '', ServiceName: '', ServiceTags: [], Type: 'ttl', Interval: '', Timeout: '', ExposedPort: 0,
        Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
      expect(all['ac-http']).toMatchObject({ CheckID: 'ac-http', Name: 'ac http', Type: 'http', Interval: '30s', Timeout: '2s', ServiceTags: [] });
      expect(all['ac-tcp']).toMatchObject({ CheckID: 'ac-tcp', Name: 'ac tcp', Type: 'tcp', Interval: '1m30s', Timeout: '' });
    });

    test('agent.check.list({filter}): §5 examples on the check records', async () => {
      expect(Object.keys(await d.checks('Type == ttl'))).toEqual(['ac-ttl']);
      expect(Object.keys(await d.checks('Status != passing and Type == ttl'))).toEqual(['ac-ttl']);
      expect(Object.keys(await d.checks('Name matches "^ac t[a-z]+$"')).sort()).toEqual(['ac-tcp', 'ac-ttl']);
      expect(await d.checks('Type == grpc')).toEqual({});
    });

    test('pass/warn/fail with a note: Status follows, the note becomes Output, Notes is untouched', async () => {
      for (const [verb, status] of [['pass', 'passing'], ['warn', 'warning'], ['fail', 'critical']] as const) {
        await d.ttl(verb, 'ac-ttl', `note for ${verb}`);
        expect((await d.checks())['ac-ttl'], verb).toMatchObject({ Status: status, Output: `note for ${verb}`, Notes: 'ttl notes' });
      }
      await d.ttl('pass', 'ac-ttl');
      expect((await d.checks())['ac-ttl']).toMatchObject({ Status: 'passing', Output: '' });
    });

    test('agent.check.deregister removes the check', async () => {
      await d.deregisterCheck('ac-tcp');
      expect(Object.keys(await d.checks()).sort()).toEqual(['ac-http', 'ac-ttl']);
    });

    test('register, pass and deregister answer 200 with an empty body (consul: no Content-Type, Content-Length 0)', async () => {
      const steps: [string, unknown][] = [
        ['/v1/agent/check/register', { ID: 'ac-raw', Name: 'ac raw', TTL: ttl }],
        ['/v1/agent/check/pass/ac-raw', undefined],
        ['/v1/agent/check/deregister/ac-raw', undefined],
      ];
      for (const [path, body] of steps) {
        const r = await c.put(path, body);
        expect(r.status, `${path}: ${r.text}`).toBe(200);
        expect(r.text, path).toBe('');
        if (dialect === 'consul') {
          expect(r.headers.get('content-type'), path).toBeNull();
          expect(r.headers.get('content-length'), path).toBe('0');
        }
      }
      expect(await d.checks()).not.toHaveProperty('ac-raw');
    });

    describe('refusals', () => {
      beforeAll(() => d.registerCheck({ ID: 'ac-upd', Name: 'ac upd', TTL: ttl }));

      const failures: Failure[] = [
        {
          what: 'pass of an unknown check id',
          viaClient: (k) => k.agent.check.pass('ac-missing'),
          clientMessage: 'not found', // the body is 80 chars or more
          raw: { method: 'PUT', path: '/v1/agent/check/pass/ac-missing' },
          consul: { status: 404, text: unknownCheck('ac-missing') },
          seed: { status: 404, code: 1006 },
        },
        deregisterUnknown('check', 'ac-missing'),
        {
          what: 'Interval without a probe kind', // the client refuses this itself ("args/grpc/… and interval, ttl, …")
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-kind', Name: 'ac bad kind', Interval: '10s' } },
          // Consul's CheckType.Validate: neither an interval kind nor an alias, so the TTL rule is the one that fails.
          consul: { status: 400, text: 'Invalid check: TTL must be > 0 for TTL checks' },
          seed: { status: 400, code: 1009 },
        },
        {
          what: 'missing Name', // the client refuses this itself ("name required")
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-name', TTL: ttl } },
          consul: { status: 400, text: 'Missing check name' },
          seed: { status: 400, code: 1008, details: 'Name' },
        },
        {
          what: 'a script check without enable_script_checks',
          viaClient: (k) => k.agent.check.register({ id: 'ac-bad-script', name: 'ac bad script', args: ['/bin/true'], interval: '10s' }),
          clientMessage: 'internal server error',
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-script', Name: 'ac bad script', Args: ['/bin/true'], Interval: '10s' } },
          consul: { status: 500, text: scriptsDisabled },
          seed: { status: 403, code: 1004 },
        },
        {
          what: 'check/update with a bad Status', // the client has no update call
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/update/ac-upd', body: { Status: 'x', Output: 'o' } },
          consul: { status: 400, text: "Invalid check status: 'x'" },
          seed: { status: 400, code: 1009, details: 'Status' },
        },
        {
          what: 'an unknown field in the body', // the client only sends fields it knows
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-field', Name: 'ac bad field', TTL: ttl, Bogus: 1 } },
          consul: { status: 400, text: 'Request decode failed: json: unknown field "Bogus"' },
          seed: { status: 400, code: 1009 },
        },
      ];

      test.each(failures)('$what', async (f) => {
        await expectFailure(dialect, c, k, f);
      });

      test('no refused registration left a check behind; ac-upd kept its status', async () => {
        const all = await d.checks();
        for (const id of ['ac-bad-kind', 'ac-bad-name', 'ac-bad-script', 'ac-bad-field']) expect(all).not.toHaveProperty(id);
        expect(all['ac-upd']).toMatchObject({ Status: 'critical', Output: '' });
      });
    });
  });

});
