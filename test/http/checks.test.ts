// Goal: the probe-driven check kinds of registry.md's "Health check status" table (consul-compat §4: HTTP, TCP, gRPC,
// TTL lapse, alias, thresholds and their outputs) against real loopback targets, through the agent's HTTP API only.
import { describe, expect, test } from 'vitest';
import { expectError, startAgent } from '../support/in-process.ts';
import { closedPort } from '../probes/servers.ts';
import { type CheckRecord, type HealthEntry, uniq, target, health, grpcPort, tcpPort, pollFor, agentCheck, checkUntil, ok, service, registerCheck, serviceCheck, statusAfterProbe, c, checksSuite } from '../support/checks.ts';

checksSuite(startAgent, { local: false });

// ---------------------------------------------------------------- 1. HTTP

describe.concurrent('HTTP checks against a local server', () => {
  test('200 → passing, 429 → warning, 500 → critical, hanging past Timeout → critical, with Consul outputs', async () => {
    const svc = await service(c, uniq('http'));
    const ok200 = target(uniq('ok'), 200);
    const busy = target(uniq('busy'), 429);
    const fail = target(uniq('fail'), 500);
    const hang = target(uniq('hang'), 'hang');
    const reg = (id: string, url: string, extra: Record<string, unknown> = {}) =>
      registerCheck(c, { ID: `${svc}-${id}`, Name: id, ServiceID: svc, HTTP: url, Interval: '1s', ...extra });
    await Promise.all([reg('ok', ok200.url), reg('busy', busy.url), reg('fail', fail.url), reg('hang', hang.url, { Timeout: '500ms' })]);

    const okRec = await checkUntil(c, `${svc}-ok`, { Status: 'passing', Output: `HTTP GET ${ok200.url}: 200 OK Output: fine` });
    expect(okRec).toMatchObject({ Node: 'node1', ServiceID: svc, ServiceName: svc, Type: 'http', Interval: '1s' });
    await checkUntil(c, `${svc}-busy`, { Status: 'warning', Output: `HTTP GET ${busy.url}: 429 Too Many Requests Output: slow down` });
    await checkUntil(c, `${svc}-fail`, { Status: 'critical', Output: `HTTP GET ${fail.url}: 500 Internal Server Error Output: boom` });
    const hangRec = await checkUntil(c, `${svc}-hang`, {
      Status: 'critical', Output: `Get "${hang.url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
    expect(hangRec.Timeout).toBe('500ms');
    expect(hang.hits).toBeGreaterThan(0);

    // The same statuses through the health endpoints.
    const r = await c.get(`/v1/health/checks/${svc}`);
    expect(r.status, r.text).toBe(200);
    const byId = Object.fromEntries(r.json<CheckRecord[]>().map((k) => [k.CheckID, k.Status]));
    expect(byId).toEqual({ [`${svc}-ok`]: 'passing', [`${svc}-busy`]: 'warning', [`${svc}-fail`]: 'critical', [`${svc}-hang`]: 'critical' });
    const entries = (await c.get(`/v1/health/service/${svc}`)).json<HealthEntry[]>();
    expect(entries).toHaveLength(1);
    expect(entries[0]!.Checks.map((k) => k.CheckID)).toEqual(expect.arrayContaining(['gossipHealth', `${svc}-ok`, `${svc}-fail`]));
    expect((await c.get(`/v1/health/service/${svc}?passing`)).json()).toEqual([]);
    const warning = (await c.get('/v1/health/state/warning')).json<CheckRecord[]>();
    expect(warning.map((k) => k.CheckID)).toContain(`${svc}-busy`);
    const critical = (await c.get('/v1/health/state/critical')).json<CheckRecord[]>();
    expect(critical.map((k) => k.CheckID)).toEqual(expect.arrayContaining([`${svc}-fail`, `${svc}-hang`]));
  });

  test('Method, Header and Body reach the target; Consul headers are sent', async () => {
    const echo = target(uniq('echo'), 200);
    const { id } = await serviceCheck('http-echo', {
      HTTP: echo.url, Interval: '1s', Method: 'POST', Header: { 'X-Roster-Test': ['one', 'two'] }, Body: '{"ping":true}',
    });
    await checkUntil(c, id, { Status: 'passing', Output: `HTTP POST ${echo.url}: 200 OK Output: fine` });
    const seen = echo.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.body).toBe('{"ping":true}');
    expect(seen.headers['x-roster-test']).toBe('one, two');
    expect(seen.headers['user-agent']).toBe('Consul Health Check');
  });

  test('a target that starts failing turns the check critical', async () => {
    const t = target(uniq('flip'), 200);
    const { id } = await serviceCheck('http-flip', { HTTP: t.url, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing' });
    t.answer = 500;
    await checkUntil(c, id, { Status: 'critical', Output: `HTTP GET ${t.url}: 500 Internal Server Error Output: boom` });
  });
});

// ---------------------------------------------------------------- 2. TCP, 3. gRPC

describe.concurrent('TCP and gRPC checks', () => {
  test('TCP: a listening port → passing "TCP connect <addr>: Success"; a closed port → critical', async () => {
    const closed = await closedPort();
    const open = await serviceCheck('tcp-open', { TCP: `127.0.0.1:${tcpPort}`, Interval: '1s' });
    const shut = await serviceCheck('tcp-closed', { TCP: `127.0.0.1:${closed}`, Interval: '1s' });
    const rec = await checkUntil(c, open.id, { Status: 'passing', Output: `TCP connect 127.0.0.1:${tcpPort}: Success` });
    expect(rec.Type).toBe('tcp');
    await checkUntil(c, shut.id, { Status: 'critical', Output: `dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });

  test('gRPC: SERVING → passing, NOT_SERVING → critical, unknown service → critical NotFound', async () => {
    const db = `127.0.0.1:${grpcPort}/db`;
    const cache = `127.0.0.1:${grpcPort}/cache`;
    const unknown = `127.0.0.1:${grpcPort}/nosuch`;
    const a = await serviceCheck('grpc-db', { GRPC: db, Interval: '1s' });
    const b = await serviceCheck('grpc-cache', { GRPC: cache, Interval: '1s' });
    const u = await serviceCheck('grpc-unknown', { GRPC: unknown, Interval: '1s' });
    const rec = await checkUntil(c, a.id, { Status: 'passing', Output: `gRPC check ${db}: success` });
    expect(rec.Type).toBe('grpc');
    await checkUntil(c, b.id, { Status: 'critical', Output: `gRPC ${cache} serving status: NOT_SERVING` });
    const uRec = await pollFor(() => agentCheck(c, u.id), (r) => r?.Output !== '');
    expect(uRec?.Status).toBe('critical');
    expect(uRec?.Output).toMatch(/^rpc error: code = NotFound desc = /);
  });

  test('gRPC: host:port alone asks about the whole server', async () => {
    const whole = `127.0.0.1:${grpcPort}`;
    const { id } = await serviceCheck('grpc-whole', { GRPC: whole, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing', Output: `gRPC check ${whole}: success` });
  });

  test('gRPC: a service switched to NOT_SERVING turns the check critical', async () => {
    const flip = `127.0.0.1:${grpcPort}/flip`;
    const { id } = await serviceCheck('grpc-flip', { GRPC: flip, Interval: '1s' });
    await checkUntil(c, id, { Status: 'passing' });
    health.setStatus('flip', 'NOT_SERVING');
    await checkUntil(c, id, { Status: 'critical', Output: `gRPC ${flip} serving status: NOT_SERVING` });
  });
});

// ---------------------------------------------------------------- 5. TTL

describe.concurrent('TTL checks', () => {
  test('pass / warn / fail (?note=) and update set status and output', async () => {
    const { id } = await serviceCheck('ttl-set', { TTL: '10m' });
    const first = await agentCheck(c, id);
    expect(first).toMatchObject({ Status: 'critical', Output: '', Type: 'ttl' });
    expect(await ok(c.put(`/v1/agent/check/pass/${id}?note=all%20good`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: 'all good' });
    expect(await ok(c.put(`/v1/agent/check/warn/${id}?note=slow`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'warning', Output: 'slow' });
    expect(await ok(c.put(`/v1/agent/check/fail/${id}?note=down`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'critical', Output: 'down' });
    expect(await ok(c.put(`/v1/agent/check/update/${id}`, { Status: 'passing', Output: 'via update' }))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: 'via update' });
    expect(await ok(c.put(`/v1/agent/check/pass/${id}`))).toBe('');
    expect(await agentCheck(c, id)).toMatchObject({ Status: 'passing', Output: '' });
    expectError(await c.put(`/v1/agent/check/update/${id}`, { Status: 'bogus', Output: 'x' }), 400, 1009);
  });

  test('no update within TTL "1s" → critical "TTL expired"', async () => {
    const { id } = await serviceCheck('ttl-lapse', { TTL: '1s', Status: 'passing' });
    await checkUntil(c, id, { Status: 'critical', Output: 'TTL expired' }, 1000 + 5000);
    const critical = (await c.get('/v1/health/state/critical')).json<CheckRecord[]>();
    expect(critical.map((k) => k.CheckID)).toContain(id);
  });

  test('a lapse after an update keeps the last output: "TTL expired (last output before timeout follows): <out>"', async () => {
    const { id } = await serviceCheck('ttl-lapse-out', { TTL: '1s' });
    await ok(c.put(`/v1/agent/check/pass/${id}?note=last%20words`));
    await checkUntil(c, id, { Status: 'critical', Output: 'TTL expired (last output before timeout follows): last words' }, 1000 + 5000);
  });

  test('pass on a non-TTL check → 400 1009; unknown id → 404 1006', async () => {
    const t = target(uniq('ttl-not'), 200);
    const { id } = await serviceCheck('not-ttl', { HTTP: t.url, Interval: '1s' });
    expectError(await c.put(`/v1/agent/check/pass/${id}`), 400, 1009);
    expectError(await c.put(`/v1/agent/check/update/${id}`, { Status: 'passing' }), 400, 1009);
    const missing = uniq('no-such-check');
    expectError(await c.put(`/v1/agent/check/pass/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/warn/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/fail/${missing}`), 404, 1006);
    expectError(await c.put(`/v1/agent/check/update/${missing}`, { Status: 'passing' }), 404, 1006);
  });
});

// ---------------------------------------------------------------- 6. alias

describe.concurrent('Alias checks', () => {
  test('an alias follows the aliased service\'s TTL check: pass → warn → fail with Consul outputs', async () => {
    const tgt = await service(c, uniq('alias-tgt'), { Check: { TTL: '10m' } });
    const holder = await service(c, uniq('alias-holder'));
    const id = `${holder}-alias`;
    await registerCheck(c, { ID: id, Name: 'alias', ServiceID: holder, AliasService: tgt });
    const name = `Service '${tgt}' check`;
    await checkUntil(c, id, { Status: 'critical', Output: `Aliased check "${name}" failing: `, Type: 'alias' });
    await ok(c.put(`/v1/agent/check/pass/service:${tgt}?note=fine`));
    await checkUntil(c, id, { Status: 'passing', Output: 'All checks passing.' });
    await ok(c.put(`/v1/agent/check/warn/service:${tgt}?note=slow`));
    await checkUntil(c, id, { Status: 'warning', Output: `Aliased check "${name}" failing: slow` });
    await ok(c.put(`/v1/agent/check/fail/service:${tgt}?note=down`));
    await checkUntil(c, id, { Status: 'critical', Output: `Aliased check "${name}" failing: down` });
    await ok(c.put(`/v1/agent/check/pass/service:${tgt}`));
    await checkUntil(c, id, { Status: 'passing', Output: 'All checks passing.' });
  });

  test('an alias of a missing service → critical "Service <id> could not be found on node node1"', async () => {
    const holder = await service(c, uniq('alias-holder'));
    const missing = uniq('alias-missing');
    const id = `${holder}-alias`;
    await registerCheck(c, { ID: id, Name: 'alias', ServiceID: holder, AliasService: missing });
    await checkUntil(c, id, { Status: 'critical', Output: `Service ${missing} could not be found on node node1` });
  });
});

// ---------------------------------------------------------------- 7. thresholds

describe.concurrent('Thresholds (counters start at the threshold)', () => {
  test('SuccessBeforePassing 2 / FailuresBeforeCritical 2: first result at once, then 2 consecutive after a change', async () => {
    // Answers by request number: 200, 500, 500, 200, 200, then 200 on.
    const t = target(uniq('thr'), [200, 500, 500, 200, 200]);
    const { id } = await serviceCheck('thr', { HTTP: t.url, Interval: '1s', SuccessBeforePassing: 2, FailuresBeforeCritical: 2 });
    const initial = (await agentCheck(c, id))?.Status;
    if (t.hits === 0) expect(initial).toBe('critical'); // no probe yet: still the initial status
    const seen: (string | undefined)[] = [];
    for (let k = 1; k <= 5; k++) seen.push(await statusAfterProbe(c, id, t, k));
    // after: 1st (200, applies at once), 2nd (500, first opposite: unchanged), 3rd (500), 4th (200: unchanged), 5th (200)
    expect(seen).toEqual(['passing', 'passing', 'critical', 'critical', 'passing']);
  });

  test('FailuresBeforeWarning 1 + FailuresBeforeCritical 3: warning first, then critical', async () => {
    const t = target(uniq('thr-warn'), [200, 500, 500, 500]);
    const { id } = await serviceCheck('thr-warn', { HTTP: t.url, Interval: '1s', FailuresBeforeWarning: 1, FailuresBeforeCritical: 3 });
    const seen: (string | undefined)[] = [];
    for (let k = 1; k <= 3; k++) seen.push(await statusAfterProbe(c, id, t, k));
    expect(seen).toEqual(['passing', 'warning', 'warning']);
    await checkUntil(c, id, { Status: 'critical', Output: `HTTP GET ${t.url}: 500 Internal Server Error Output: boom` });
    expect(t.hits).toBeGreaterThanOrEqual(4);
  });

  test('FailuresBeforeWarning 0 is FailuresBeforeCritical, as in Consul\'s agent: no warning before critical', async () => {
    const t = target(uniq('thr-zero'), [200, 500, 500]);
    const { id } = await serviceCheck('thr-zero', { HTTP: t.url, Interval: '1s', FailuresBeforeWarning: 0, FailuresBeforeCritical: 2 });
    const seen: (string | undefined)[] = [];
    for (let k = 1; k <= 3; k++) seen.push(await statusAfterProbe(c, id, t, k));
    expect(seen).toEqual(['passing', 'passing', 'critical']);
  });
});
