// Goal: the --config-file services and checks (consul-compat.md §1.3, §1.4) of a really started agent: registered
// at start, and a definition that does not validate stops the start with its reason.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, repoRoot, startAgent, tempDataDir, tsxLoader, type Agent } from '../support/agent.ts';
import { type Client, type NodeRecord, type HealthEntry, ttl, getJson, registerCheck, agentChecks, agentServices } from '../support/health-api.ts';

// ------------------------------------------------------------------------------------------------ 6. config file
/** Runs the agent to its exit (a start that must fail); kills it if it is still running at the deadline. */
function runToExit(configPath: string, deadlineMs = 20_000): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const dataDir = tempDataDir();
  const proc = spawn(process.execPath, [
    '--import', tsxLoader, join(repoRoot, 'src/main.ts'),
    '--http-port', '0', '--data-dir', dataDir, '--node-name', 'node1', '--config-file', configPath,
  ], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`agent still running after ${deadlineMs} ms (it should have refused the config):\n${stdout}${stderr}`));
    }, deadlineMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, stderr, stdout });
    });
  });
}

describe('--config-file definitions', () => {
  let dir: string;
  let agent: Agent;
  let c: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'roster-health-config-'));
    const config = {
      node_name: 'from-file',
      datacenter: 'dc-file',
      enable_script_checks: true,
      service: { name: 'cfg-web', id: 'cfg-web-1', port: 9000, tags: ['file'], check: { ttl, status: 'passing' } },
      services: [{ name: 'cfg-api', checks: [{ ttl }, { ttl, status: 'warning' }] }],
      check: { id: 'cfg-mem', name: 'cfg mem', ttl },
      checks: [{ name: 'cfg-disk', ttl, status: 'warning', notes: 'from the file' }, { id: 'cfg-web-ttl', name: 'web ttl', service_id: 'cfg-web-1', ttl }],
    };
    writeFileSync(join(dir, 'good.json'), JSON.stringify(config));
    agent = await startAgent({ args: ['--config-file', join(dir, 'good.json')], env: { DOCKER_HOST: `unix://${join(dir, 'no-docker.sock')}` } });
    c = client(agent);
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('services and checks of the file are registered at start (agent services and checks)', async () => {
    const services = await agentServices(c);
    expect(services['cfg-web-1']).toMatchObject({ ID: 'cfg-web-1', Service: 'cfg-web', Port: 9000, Tags: ['file'] });
    expect(services['cfg-api']).toMatchObject({ ID: 'cfg-api', Service: 'cfg-api' });
    const checks = await agentChecks(c);
    expect(checks['service:cfg-web-1']).toMatchObject({ Name: "Service 'cfg-web' check", Status: 'passing', ServiceID: 'cfg-web-1', ServiceTags: ['file'], Type: 'ttl' });
    expect(checks['service:cfg-api:1']).toMatchObject({ Status: 'critical', ServiceID: 'cfg-api' });
    expect(checks['service:cfg-api:2']).toMatchObject({ Status: 'warning', ServiceID: 'cfg-api' });
    expect(checks['cfg-mem']).toMatchObject({ Name: 'cfg mem', Status: 'critical', ServiceID: '', Type: 'ttl' });
    expect(checks['cfg-disk']).toMatchObject({ CheckID: 'cfg-disk', Status: 'warning', Notes: 'from the file' });
    expect(checks['cfg-web-ttl']).toMatchObject({ ServiceID: 'cfg-web-1', ServiceName: 'cfg-web' });
    expect((await getJson<HealthEntry[]>(c, '/v1/health/service/cfg-web')).map((e) => e.Service.ID)).toEqual(['cfg-web-1']);
  });

  test('flags override the file (the harness\'s --node-name node1 wins); a file-only datacenter shows in /v1/agent/self', async () => {
    const self = await getJson(c, '/v1/agent/self');
    expect(self.Config).toMatchObject({ NodeName: 'node1', Datacenter: 'dc-file' });
    expect(self.Member.Name).toBe('node1');
    for (const k of Object.values(await agentChecks(c))) expect(k.Node).toBe('node1');
    expect((await getJson<NodeRecord[]>(c, '/v1/catalog/nodes')).map((n) => [n.Node, n.Datacenter])).toEqual([['node1', 'dc-file']]);
    expect((await agentServices(c))['cfg-web-1']!.Datacenter).toBe('dc-file');
    expect(await getJson(c, '/v1/catalog/node/from-file')).toBeNull();
  });

  test('with enable_script_checks, script and container checks register over HTTP (args, docker_container_id, runtime_container_id, shell)', async () => {
    await registerCheck(c, { name: 'cfg-script', args: ['true'], interval: '30s', timeout: '5s', service_id: 'cfg-api' });
    await registerCheck(c, { id: 'cfg-docker', name: 'cfg docker', script_args: ['true'], docker_container_id: 'no-such-container', shell: '/bin/sh', interval: '30s', service_id: 'cfg-api' });
    await registerCheck(c, { ID: 'cfg-runtime', Name: 'cfg runtime', Args: ['true'], runtime_container_id: 'no-such-container', Interval: '30s', ServiceID: 'cfg-api' });
    const checks = await agentChecks(c);
    expect(checks['cfg-script']).toMatchObject({ Type: 'script', Interval: '30s', Timeout: '5s', ServiceID: 'cfg-api' });
    expect(checks['cfg-docker']).toMatchObject({ Type: 'docker', ServiceID: 'cfg-api' });
    expect(checks['cfg-runtime']).toMatchObject({ Type: 'docker' });
  });

  test('a bad definition in the file → exit code 2, stderr names the problem; nothing listens', async () => {
    writeFileSync(join(dir, 'bad-check.json'), JSON.stringify({ checks: [{ name: 'bad-check', ttl: '10s', interval: '10s' }] }));
    writeFileSync(join(dir, 'bad-service.json'), JSON.stringify({ service: { name: 'bad-svc', address: '0.0.0.0' } }));
    writeFileSync(join(dir, 'unknown-key.json'), JSON.stringify({ bogus_setting: true, datacenter: 'dc1' }));
    const [badCheck, badService, unknownKey] = await Promise.all([
      runToExit(join(dir, 'bad-check.json')), runToExit(join(dir, 'bad-service.json')), runToExit(join(dir, 'unknown-key.json')),
    ]);
    expect(badCheck.code, badCheck.stderr).toBe(2);
    // The usage text that follows mentions neither the field names nor the service's fault.
    expect(badCheck.stderr).toMatch(/Interval[^\n]*TTL|TTL[^\n]*Interval/);
    expect(badService.code, badService.stderr).toBe(2);
    expect(badService.stderr).toMatch(/Address/);
    expect(unknownKey.code, unknownKey.stderr).toBe(2);
    expect(unknownKey.stderr).toContain('bogus_setting');
    for (const r of [badCheck, badService, unknownKey]) expect(r.stdout + r.stderr).not.toMatch(/roster listening/);
  }, 30_000);
});
