// Goal: `roster reload`, `roster leave` and `roster force-leave` as a user runs them against a started agent:
// reload applies a changed config file, a broken one exits 1 with the agent's reason, a changed setting
// that needs a restart is named on stderr (exit 0); force-leave of an unknown node exits 1, a missing node
// name exits 2, a live member is left untouched and the command says so (exit 0); and leave stops the agent
// (exit 0 on both sides).
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { roster } from './support.ts';

describe('roster reload, leave, force-leave', () => {
  let dir: string;
  let file: string;
  let agent: Agent;
  const run = (args: string[]) => roster(args, { agent: agent.url });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'roster-cli-ops-'));
    file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ services: [{ id: 'web-1', name: 'web' }] }));
    agent = await startAgent({ args: ['--config-file', file] });
  }, 30_000);

  afterAll(async () => {
    if (agent?.proc.exitCode === null) await agent.stop();
    agent?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  test('reload applies the changed file; a broken file exits 1 with the reason', async () => {
    writeFileSync(file, JSON.stringify({ services: [{ id: 'web-2', name: 'web' }] }));
    expect(await run(['reload'])).toMatchObject({ code: 0, stdout: 'Configuration reload triggered\n' });
    expect(Object.keys((await client(agent).get('/v1/agent/services')).json())).toEqual(['web-2']);
    expect(JSON.parse((await run(['reload', '--json'])).stdout)).toEqual({ ok: true });
    writeFileSync(file, JSON.stringify({ services: [{ id: 'web-2', name: 'web' }], write_timeout: '45s' }));
    expect(await run(['reload'])).toMatchObject({
      code: 0, stdout: 'Configuration reload triggered\n',
      stderr: 'roster: warning: changed settings that take effect only at the next restart: writeTimeoutMs\n',
    });
    writeFileSync(file, '{');
    const broken = await run(['reload']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/reload failed: --config-file: .* is not valid JSON/);
  }, 30_000);

  test('force-leave: an unknown node exits 1; no node exits 2; a live member is untouched; -prune (Consul\'s flag) is accepted', async () => {
    const unknown = await run(['force-leave', 'nobody']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no member named "nobody"/);
    expect((await run(['force-leave'])).code).toBe(2);
    const live = 'Node node1 not forced to leave: node1 is alive: a live member is not forced to leave; nothing changed\n';
    expect(await run(['force-leave', '-prune', 'node1'])).toMatchObject({ code: 0, stdout: live });
    expect((await client(agent).get('/v1/agent/members')).json()).toMatchObject([{ Name: 'node1', Status: 1 }]);
  }, 30_000);

  test('leave: exit 0, and the agent stops with exit code 0', async () => {
    const exited = once(agent.proc, 'exit');
    expect(await run(['leave'])).toMatchObject({ code: 0, stdout: 'Graceful leave complete\n' });
    expect((await exited)[0]).toBe(0);
  }, 30_000);
});
