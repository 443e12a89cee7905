// Goal: script checks (remote and config-file), the reaper, sessions bound to checks and container exec checks
// (registry.md "Health check status", consul-compat §4) through really started agents' HTTP API: one with script
// checks enabled and the fake Docker Engine as DOCKER_HOST, one with only local script checks.
import { describe, expect, test } from 'vitest';
import { expectError, startAgent } from '../support/agent.ts';
import { uniq, type Target, target, engineCalls, pollFor, agentChecks, agentCheck, checkUntil, ok, service, registerCheck, serviceCheck, sessionInfo, kv, acquire, sessionGone, expectLockDelay, missingSocket, c, lc, checksSuite } from '../support/checks.ts';

checksSuite(startAgent, { local: true });

// ---------------------------------------------------------------- 4. script

describe.concurrent('Script checks', () => {
  test('exit 0 / 1 / 2 → passing / warning / critical with the output', async () => {
    const sh = (script: string) => ({ Args: ['/bin/sh', '-c', script], Interval: '1s' });
    const p = await serviceCheck('script-ok', sh('echo all good; exit 0'));
    const w = await serviceCheck('script-warn', sh('echo degraded; exit 1'));
    const k = await serviceCheck('script-crit', sh('echo down; exit 2'));
    const rec = await checkUntil(c, p.id, { Status: 'passing', Output: 'all good\n' });
    expect(rec.Type).toBe('script');
    await checkUntil(c, w.id, { Status: 'warning', Output: 'degraded\n' });
    await checkUntil(c, k.id, { Status: 'critical', Output: 'down\n' });
  });

  test('a script sleeping past Timeout "1s" → critical "Timed out (1s) running check"', async () => {
    const { id } = await serviceCheck('script-slow', { Args: ['/bin/sleep', '5'], Interval: '1s', Timeout: '1s' });
    await checkUntil(c, id, { Status: 'critical', Output: 'Timed out (1s) running check' });
  });

  test('without enable_script_checks, registering Args (or a container check) over HTTP → 403 code 1004', async () => {
    const body = expectError(await lc.put('/v1/agent/check/register', { Name: uniq('remote-script'), Args: ['/bin/true'], Interval: '1s' }), 403, 1004);
    expect(body.message).toContain('enable_script_checks');
    expectError(await lc.put('/v1/agent/check/register', {
      Name: uniq('remote-container'), Args: ['/bin/true'], DockerContainerID: 'web-1', Interval: '1s',
    }), 403, 1004);
    expectError(await lc.put('/v1/agent/service/register', {
      Name: uniq('remote-svc'), Check: { Args: ['/bin/true'], Interval: '1s' },
    }), 403, 1004);
    expect(Object.keys(await agentChecks(lc)).sort()).toEqual(['local-docker', 'local-script']);
  });

  test('with only enable_local_script_checks, the config file\'s script check runs', async () => {
    await checkUntil(lc, 'local-script', { Status: 'passing', Output: 'local ok\n', Type: 'script', Name: 'local script' });
  });
});

// ---------------------------------------------------------------- 8. reaper

describe.concurrent('Reaper (DeregisterCriticalServiceAfter; check_reap_interval 1s, check_deregister_min 2s)', () => {
  test('a service whose check stays critical past DeregisterCriticalServiceAfter is removed with its checks and bound sessions', async () => {
    const svc = uniq('reap');
    await service(c, svc, {
      Checks: [
        { CheckID: `${svc}-crit`, Name: 'crit', TTL: '10m', Status: 'critical', DeregisterCriticalServiceAfter: '2s' },
        { CheckID: `${svc}-ok`, Name: 'ok', TTL: '10m', Status: 'passing' },
      ],
    });
    // A session bound to the *other*, passing check of the same service, holding a lock.
    const session = await c.session({ ServiceChecks: [{ ID: `${svc}-ok` }] });
    const key = `checks/${svc}`;
    await acquire(c, key, session);
    expect(Object.keys((await c.get('/v1/agent/services')).json())).toContain(svc);

    const services = await pollFor(async () => (await c.get('/v1/agent/services')).json<Record<string, unknown>>(), (s) => !(svc in s), 10_000);
    expect(Object.keys(services)).not.toContain(svc);
    const healthR = await c.get(`/v1/health/service/${svc}`);
    expect(healthR.status, healthR.text).toBe(200);
    expect(healthR.json()).toEqual([]);
    expect((await c.get(`/v1/health/checks/${svc}`)).json()).toEqual([]);
    const checks = await agentChecks(c);
    expect(checks[`${svc}-crit`]).toBeUndefined();
    expect(checks[`${svc}-ok`]).toBeUndefined();
    await sessionGone(c, session, 2000);
    const e = await kv(c, key);
    expect(e?.Session).toBeUndefined();
    expect(e?.Value).toBe(Buffer.from('held').toString('base64'));
  });
});

// ---------------------------------------------------------------- 9. sessions bound to checks

describe.concurrent('Sessions bound to checks', () => {
  /** A service with an HTTP check against its own target, waited to passing. */
  async function webService(): Promise<{ svc: string; checkId: string; t: Target }> {
    const t = target(uniq('web'), 200);
    const svc = await service(c, uniq('web'), { Check: { HTTP: t.url, Interval: '1s' } });
    const checkId = `service:${svc}`;
    await checkUntil(c, checkId, { Status: 'passing', Name: `Service '${svc}' check` });
    return { svc, checkId, t };
  }

  test('Behavior release: the bound HTTP check going critical invalidates the session, releases the lock, arms lock-delay', async () => {
    const { checkId, t } = await webService();
    const session = await c.session({ ServiceChecks: [{ ID: checkId }] });
    const info = (await sessionInfo(c, session))[0] as { ServiceChecks: { ID: string }[] };
    expect(info.ServiceChecks.map((x) => x.ID)).toEqual([checkId]);
    const key = `checks/${uniq('lock-release')}`;
    await acquire(c, key, session);
    const before = (await kv(c, key))!;
    t.answer = 500;
    await sessionGone(c, session);
    expect((await agentCheck(c, checkId))?.Status).toBe('critical');
    const after = await kv(c, key);
    expect(after).not.toBeNull();
    expect(after!.Session).toBeUndefined();
    expect(after!.Value).toBe(before.Value);
    expect(after!.LockIndex).toBe(before.LockIndex);
    expect(after!.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
    await expectLockDelay(c, key);
  });

  test('Behavior delete: the bound check going critical deletes the held key, lock-delay applies', async () => {
    const { checkId, t } = await webService();
    const session = await c.session({ ServiceChecks: [{ ID: checkId }], Behavior: 'delete' });
    const key = `checks/${uniq('lock-delete')}`;
    await acquire(c, key, session);
    t.answer = 500;
    await sessionGone(c, session);
    expect(await kv(c, key)).toBeNull();
    await expectLockDelay(c, key);
  });

  test('NodeChecks: an agent-registered node-level HTTP check going critical invalidates the session', async () => {
    const t = target(uniq('node-http'), 200);
    const checkId = uniq('node-http');
    await registerCheck(lc, { ID: checkId, Name: 'node http', HTTP: t.url, Interval: '1s' });
    await checkUntil(lc, checkId, { Status: 'passing', ServiceID: '' });
    const session = await lc.session({ NodeChecks: [checkId] });
    const key = `checks/${uniq('node-lock')}`;
    await acquire(lc, key, session);
    t.answer = 500;
    await sessionGone(lc, session);
    expect((await kv(lc, key))?.Session).toBeUndefined();
    await expectLockDelay(lc, key);
  });

  test('binding a critical check at create → 400 1009', async () => {
    const svc = await service(c, uniq('crit-bind'), { Check: { TTL: '10m' } }); // registered critical by default
    expectError(await c.put('/v1/session/create', { ServiceChecks: [{ ID: `service:${svc}` }] }), 400, 1009);
  });

  test('deregistering the service invalidates the bound session and releases its lock', async () => {
    const svc = await service(c, uniq('dereg'), { Check: { TTL: '10m', Status: 'passing' } });
    const session = await c.session({ ServiceChecks: [{ ID: `service:${svc}` }] });
    const key = `checks/${uniq('dereg-lock')}`;
    await acquire(c, key, session);
    await ok(c.put(`/v1/agent/service/deregister/${svc}`));
    await sessionGone(c, session, 3000);
    expect((await kv(c, key))?.Session).toBeUndefined();
    await expectLockDelay(c, key);
  });

  test('deregistering the bound check itself invalidates the session', async () => {
    const { id } = await serviceCheck('dereg-check', { TTL: '10m', Status: 'passing' });
    const session = await c.session({ ServiceChecks: [{ ID: id }] });
    await ok(c.put(`/v1/agent/check/deregister/${id}`));
    await sessionGone(c, session, 3000);
  });

  test('a bound TTL check failed through the API invalidates the session', async () => {
    const { id } = await serviceCheck('ttl-bound', { TTL: '10m', Status: 'passing' });
    const session = await c.session({ ServiceChecks: [{ ID: id }] });
    await ok(c.put(`/v1/agent/check/fail/${id}?note=gone`));
    await sessionGone(c, session, 3000);
  });
});

// ---------------------------------------------------------------- 10. container exec

describe.concurrent('Container exec checks through the Docker Engine API', () => {
  test('RuntimeContainerID / DockerContainerID with Args exiting 0 / 1 / 2 → passing / warning / critical', async () => {
    const sh = (script: string) => ['/bin/sh', '-c', script];
    const p = await serviceCheck('ctr-ok', { RuntimeContainerID: 'web-1', Args: sh('echo ready; exit 0'), Interval: '1s' });
    const w = await serviceCheck('ctr-warn', { RuntimeContainerID: 'web-1', Args: sh('echo degraded; exit 1'), Interval: '1s' });
    const k = await serviceCheck('ctr-crit', { DockerContainerID: 'web-1', Args: sh('echo down; exit 2'), Interval: '1s' });
    const rec = await checkUntil(c, p.id, { Status: 'passing', Output: 'ready\n' });
    expect(rec.Type).toBe('docker');
    await checkUntil(c, w.id, { Status: 'warning', Output: 'degraded\n' });
    await checkUntil(c, k.id, { Status: 'critical', Output: 'down\n' });
    const creates = engineCalls.filter((x) => x.method === 'POST' && x.path === '/containers/web-1/exec');
    expect(creates.map((x) => (x.body as { Cmd: string[] }).Cmd)).toEqual(expect.arrayContaining([sh('echo ready; exit 0'), sh('echo down; exit 2')]));
  });

  test('an unknown container → critical "create exec failed for unknown container <id>"', async () => {
    const { id } = await serviceCheck('ctr-missing', { RuntimeContainerID: 'missing', Args: ['/bin/true'], Interval: '1s' });
    await checkUntil(c, id, { Status: 'critical', Output: 'create exec failed for unknown container missing' });
  });

  test('an agent whose DOCKER_HOST names a missing socket → critical with an output naming the address', async () => {
    const rec = await pollFor(() => agentCheck(lc, 'local-docker'), (r) => r?.Output !== '' && r?.Output !== undefined);
    expect(rec).toMatchObject({ Status: 'critical', Type: 'docker' });
    expect(rec?.Output).toContain(`unix://${missingSocket}`);
  });
});
