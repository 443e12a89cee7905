// Goal: health queries with filters and blocking (consul-compat.md §1.5, §5, §2) and sessions bound to checks (§1.1,
// §3) run once per dialect — through the real npm `consul` 2.0.1 client against `--dialect consul` and over raw
// HTTP against the seed dialect — so the two renderings of one behaviour cannot drift apart.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from '../support/in-process.ts';
import { type Client, type State, type CheckRecord, type HealthEntry, type HealthQuery, type Driver, ttl, fq, checkOrder, ids, until, expectFailure, dialects, consulHealthSuite } from '../support/consul-health.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  let k: Consul;
  let d: Driver;
  const removeAll = consulHealthSuite(dialect, (s) => ({ c, k, d } = s));

  describe('3. health (§1.5, §5, §2)', () => {
    const node = 'hl-node';
    const api1 = 'service:hl-api-1';
    const api2 = 'service:hl-api-2';

    /** node check passing, instance 1 passing, instance 2 warning — every status set by a TTL call. */
    async function baseline(): Promise<void> {
      await d.ttl('pass', node, 'node ok');
      await d.ttl('pass', api1, 'ok 1');
      await d.ttl('warn', api2, 'slow');
    }

    beforeAll(async () => {
      await d.registerCheck({ ID: node, Name: 'hl node', TTL: ttl });
      await d.registerService({ Name: 'hl-api', ID: 'hl-api-1', Tags: ['primary', 'v1'], Port: 9001, Meta: { env: 'prod' }, Check: { TTL: ttl } });
      await d.registerService({ Name: 'hl-api', ID: 'hl-api-2', Tags: ['v2'], Port: 9002, Meta: { env: 'dev' }, Check: { TTL: ttl } });
      await baseline();
    });
    afterAll(() => removeAll([node], ['hl-api-1', 'hl-api-2']));

    test('health.node(): every check of the node incl. gossipHealth, in storage order; unknown node []', async () => {
      await baseline();
      const list = await d.healthNode('node1');
      expect(ids(list)).toEqual(['gossipHealth', node, api1, api2].sort(checkOrder));
      expect(list.map((k) => [k.CheckID, k.Status, k.Output, k.Type])).toEqual([
        ['gossipHealth', 'passing', expect.any(String), ''],
        [node, 'passing', 'node ok', 'ttl'],
        [api1, 'passing', 'ok 1', 'ttl'],
        [api2, 'warning', 'slow', 'ttl'],
      ]);
      expect(list.every((k) => k.Node === 'node1')).toBe(true);
      expect(await d.healthNode('no-such-node')).toEqual([]);
    });

    test('health.checks(): the service checks of every instance, no node checks', async () => {
      await baseline();
      const list = await d.healthChecks('hl-api');
      expect(list.map((k) => [k.CheckID, k.ServiceID, k.ServiceName, k.ServiceTags, k.Status])).toEqual([
        [api1, 'hl-api-1', 'hl-api', ['primary', 'v1'], 'passing'],
        [api2, 'hl-api-2', 'hl-api', ['v2'], 'warning'],
      ]);
      expect(await d.healthChecks('hl-missing')).toEqual([]);
    });

    test('health.service(): {Node, Service, Checks} per instance; Checks = node checks + the instance\'s own', async () => {
      await baseline();
      const list = await d.healthService({ service: 'hl-api' });
      expect(list.map((e) => e.Service.ID)).toEqual(['hl-api-1', 'hl-api-2']);
      expect(list[0]!.Node).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      expect(list[0]!.Service).toMatchObject({ ID: 'hl-api-1', Service: 'hl-api', Tags: ['primary', 'v1'], Port: 9001, Meta: { env: 'prod' } });
      expect(ids(list[0]!.Checks)).toEqual(['gossipHealth', node, api1]);
      expect(ids(list[1]!.Checks)).toEqual(['gossipHealth', node, api2]);
      expect(await d.healthService({ service: 'hl-missing' })).toEqual([]);
    });

    test('health.service({passing}): drops an instance with any non-passing check, node checks included', async () => {
      await baseline();
      const passing = async () => (await d.healthService({ service: 'hl-api', passing: true })).map((e) => e.Service.ID);
      expect(await passing()).toEqual(['hl-api-1']); // hl-api-2 is warning
      await d.ttl('pass', api2, 'better');
      expect(await passing()).toEqual(['hl-api-1', 'hl-api-2']);
      await d.ttl('fail', node, 'node down');
      expect(await passing()).toEqual([]);
      await baseline();
      expect(await passing()).toEqual(['hl-api-1']);
    });

    test('health.service({tag}) and ({filter}) with §5 examples', async () => {
      await baseline();
      const pick = async (q: Omit<HealthQuery, 'service'>) => (await d.healthService({ service: 'hl-api', ...q })).map((e) => e.Service.ID);
      expect(await pick({ tag: 'primary' })).toEqual(['hl-api-1']);
      expect(await pick({ tag: 'v2' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: '"primary" in Service.Tags' })).toEqual(['hl-api-1']);
      expect(await pick({ filter: 'Service.Tags contains "v2"' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: 'Service.Meta.env == prod' })).toEqual(['hl-api-1']);
      expect(await pick({ filter: 'Checks.Status == warning' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: 'Checks.Status == critical' })).toEqual([]);
      expect(await pick({ tag: 'v1', filter: 'Service.Meta.env == dev' })).toEqual([]);
    });

    test('health.state(any|passing|warning|critical) follows TTL pass/warn/fail', async () => {
      await baseline();
      const mine = (list: CheckRecord[]) => ids(list).filter((id) => id.startsWith('hl-') || id.startsWith('service:hl-'));
      expect(mine(await d.healthState('any'))).toEqual([node, api1, api2]);
      expect(ids(await d.healthState('any'))).toContain('gossipHealth');
      expect(mine(await d.healthState('passing'))).toEqual([node, api1]);
      expect(mine(await d.healthState('warning'))).toEqual([api2]);
      expect(await d.healthState('critical')).toEqual([]);
      await d.ttl('fail', api2, 'broken');
      const critical = await d.healthState('critical');
      expect(critical.map((k) => [k.CheckID, k.Status, k.Output])).toEqual([[api2, 'critical', 'broken']]);
      expect(mine(await d.healthState('warning'))).toEqual([]);
      expect(ids(await d.healthState('any', 'ServiceName == "hl-api"'))).toEqual([api1, api2]);
      expect(ids(await d.healthState('any', 'not (Status == passing or Status == warning)'))).toEqual([api2]);
    });

    test('/v1/health/state/fail and /v1/health/state/foo (raw: the client refuses both states itself)', async () => {
      await baseline();
      await d.ttl('fail', api2, 'broken');
      const fail = await c.get('/v1/health/state/fail');
      expect(fail.status, fail.text).toBe(200);
      if (dialect === 'seed') {
        // Registry spec: `fail` = the critical checks.
        expect(ids(fail.json())).toEqual([api2]);
        expect(fail.json()).toEqual(await d.healthState('critical'));
        const body = expectError(await c.get('/v1/health/state/foo'), 400, 1009);
        expect(body.details).toHaveProperty(['state']);
      } else {
        // consul-compat §1.5: Consul does not validate the state and matches Status == state literally → [].
        expect(fail.json()).toEqual([]);
        const foo = await c.get('/v1/health/state/foo');
        expect(foo.status, foo.text).toBe(200);
        expect(foo.json()).toEqual([]);
        await expect(k.health.state('fail' as State)).rejects.toThrow('consul: health.state: state invalid: fail');
      }
    });

    test('a bad filter: consul 500 with bexpr\'s text, seed 400 1009 with details.filter holding that text (line:column (offset))', async () => {
      const raw = (path: string) => ({ method: 'GET', path });
      const body = await expectFailure(dialect, c, k, {
        what: 'health.service with a filter cut short',
        viaClient: (k) => k.health.service({ service: 'hl-api', filter: 'Service.Tags contains' }),
        clientMessage: 'internal server error',
        raw: raw(`/v1/health/service/hl-api${fq('Service.Tags contains')}`),
        consul: { status: 500, text: /^Failed to create boolean expression evaluator: 1:22 \(21\): no match found, expected: / },
        seed: { status: 400, code: 1009, details: 'filter' },
      });
      if (dialect === 'seed') expect(body.details).toEqual({ filter: [expect.stringMatching(/^Syntax:Failed to create boolean expression evaluator: 1:22 \(21\): no match found, expected: /)] });
      const agentBody = await expectFailure(dialect, c, k, {
        what: 'agent.check.list with a filter cut short',
        viaClient: (k) => k.agent.check.list({ filter: 'Status ==' }),
        clientMessage: 'internal server error',
        raw: raw(`/v1/agent/checks${fq('Status ==')}`),
        consul: { status: 500, text: /^(Failed to create boolean expression evaluator: )?1:10 \(9\): no match found, expected: / },
        seed: { status: 400, code: 1009, details: 'filter' },
      });
      if (dialect === 'seed') expect(agentBody.details).toEqual({ filter: [expect.stringMatching(/^Syntax:(Failed to create boolean expression evaluator: )?1:10 \(9\): no match found, expected: /)] });
    });

    test('health and catalog reads carry X-Consul-Index, KnownLeader, LastContact and Effective-Consistency', async () => {
      for (const path of [
        '/v1/health/node/node1', '/v1/health/checks/hl-api', '/v1/health/service/hl-api', '/v1/health/state/any',
        '/v1/catalog/services', '/v1/catalog/service/hl-api', '/v1/catalog/nodes', '/v1/catalog/node/node1',
      ]) {
        const r = await c.get(path);
        expect(r.status, path).toBe(200);
        expect(r.headers.get('x-consul-index'), path).toMatch(/^[1-9]\d*$/);
        expect(r.headers.get('x-consul-knownleader'), path).toBe('true');
        expect(r.headers.get('x-consul-lastcontact'), path).toBe('0');
        expect(r.headers.get('x-consul-effective-consistency'), path).toMatch(/^(leader|stale|consistent)$/);
      }
    });

    test('a blocking health.service read (consul: the client\'s watch) wakes when a check changes', async () => {
      await baseline();
      const statusOf = (entries: HealthEntry[], id: string) =>
        entries.find((e) => e.Service.ID === id)?.Checks.find((k) => k.CheckID === `service:${id}`)?.Status;
      const { entries, before, after } = await d.blockOnHealthService(
        'hl-api',
        () => d.ttl('fail', api1, 'gone'),
        (e) => statusOf(e, 'hl-api-1') === 'critical',
      );
      expect(after).toBeGreaterThan(before);
      expect(statusOf(entries, 'hl-api-1')).toBe('critical');
      expect(statusOf(entries, 'hl-api-2')).toBe('warning');
    }, 30_000);
  });

  describe('5. sessions bound to checks (§1.1, §3)', () => {
    const check = 'sx-ttl';
    const key = `sx/lock-${dialect}`;
    const sessions: string[] = [];
    afterAll(async () => {
      for (const id of sessions) await c.put(`/v1/session/destroy/${id}`);
      await c.del(`/v1/kv/${key}`);
      await removeAll([check], []);
    });

    test('session.create({checks: ["serfHealth", <ttl check>]}): NodeChecks ["gossipHealth"], Checks keeps both', async () => {
      await d.registerCheck({ ID: check, Name: 'sx ttl', TTL: ttl, Status: 'passing' });
      const id = await d.sessionCreate(['serfHealth', check]);
      sessions.push(id);
      const s = await d.sessionInfo(id);
      expect(s).toMatchObject({
        ID: id, Node: 'node1', Behavior: 'release', LockDelay: 15_000_000_000, NodeChecks: ['gossipHealth'],
        ServiceChecks: null, Checks: ['gossipHealth', check],
      });
      expect(s!.CreateIndex).toBe(s!.ModifyIndex);
    });

    test('failing the TTL check invalidates the session (info → undefined) and releases its lock; lock-delay follows', async () => {
      const id = sessions[0]!;
      expect(await d.acquire(key, 'held', id)).toEqual({ ok: true });
      expect(await d.kvGet(key)).toMatchObject({ Key: key, Value: 'held', Session: id, LockIndex: 1 });

      await d.ttl('fail', check, 'down');
      await until('session invalidated', () => d.sessionInfo(id), (s) => s === undefined);
      const entry = await until('lock released', () => d.kvGet(key), (e) => e !== undefined && e.Session === undefined);
      expect(entry).toMatchObject({ Key: key, Value: 'held', LockIndex: 1 });
      expect(entry).not.toHaveProperty('Session');

      // Invalidation arms the key's lock-delay (15 s default): another session cannot take it yet.
      const other = await d.sessionCreate();
      sessions.push(other);
      const again = await d.acquire(key, 'mine', other);
      expect(again.ok).toBe(false);
      if (dialect === 'seed') expect(again.reason).toBe('lock-delay');
      else {
        const r = await c.put(`/v1/kv/${key}?acquire=${other}`, 'mine');
        expect([r.status, r.text]).toEqual([200, 'false']);
      }
      expect(await d.kvGet(key)).toMatchObject({ Value: 'held' });
      expect(await d.kvGet(key)).not.toHaveProperty('Session');
    });

    test('a session cannot bind a critical check (consul 500 Consul\'s text; seed 400 1009)', async () => {
      await expectFailure(dialect, c, k, {
        what: 'session bound to a critical check',
        viaClient: (k) => k.session.create({ checks: ['serfHealth', check] }),
        clientMessage: `Check '${check}' is in critical state`,
        raw: { method: 'PUT', path: '/v1/session/create', body: { Checks: ['serfHealth', check] } },
        consul: { status: 500, text: `Check '${check}' is in critical state` },
        seed: { status: 400, code: 1009 },
      });
    });
  });
});
