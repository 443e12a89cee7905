// Goal: `roster maint` (enable, disable, list; node and service; Consul's single-dash flags),
// `roster catalog services|nodes` and `roster session renew` as a user runs them against a started agent.
// Every --json output parses; failures exit 1, usage errors 2.
import { describe, expect, test } from 'vitest';
import { client, withAgent } from '../support/agent.ts';
import { roster } from './support.ts';

let http: ReturnType<typeof client>;
let run: (args: string[]) => ReturnType<typeof roster>;

withAgent(async (a) => {
  http = client(a);
  run = (args) => roster(args, { agent: a.url });
  expect((await http.put('/v1/agent/service/register', { ID: 'web-1', Name: 'web', Tags: ['v2', 'blue'], Port: 80 })).status).toBe(200);
});

const checkIds = async () => Object.keys((await http.get('/v1/agent/checks')).json<Record<string, unknown>>());

describe('maint', () => {
  test('nothing in maintenance: the list says so (text and --json)', async () => {
    expect(await run(['maint'])).toMatchObject({ code: 0, stdout: 'No maintenance\n' });
    expect(JSON.parse((await run(['maint', '--json'])).stdout)).toEqual({ node: null, services: [] });
  });

  test('the node: -enable -reason (Consul\'s flags) enters, the list shows it, -disable leaves', async () => {
    expect(await run(['maint', '-enable', '-reason', 'kernel upgrade'])).toMatchObject({ code: 0, stdout: 'Node entered maintenance mode\n' });
    expect(await checkIds()).toContain('_node_maintenance');
    const listed = await run(['maint']);
    expect(listed.stdout).toMatch(/^Node:\n {2}Name: +node1\n {2}Reason: +kernel upgrade\n$/);
    expect(JSON.parse((await run(['maint', '--json'])).stdout)).toEqual({ node: { name: 'node1', reason: 'kernel upgrade' }, services: [] });
    expect(await run(['maint', '-disable'])).toMatchObject({ code: 0, stdout: 'Node left maintenance mode\n' });
    expect(await checkIds()).not.toContain('_node_maintenance');
  });

  test('a service: --enable --service, listed with the default reason; --disable --service', async () => {
    expect(await run(['maint', '--enable', '--service', 'web-1'])).toMatchObject({ code: 0, stdout: 'Service entered maintenance mode\n' });
    const listed = await run(['maint']);
    expect(listed.stdout).toMatch(/^Service:\n {2}ID: +web-1\n {2}Reason: +Maintenance mode is enabled for this service, but no reason was provided\. This is a default message\.\n$/);
    expect(JSON.parse((await run(['maint', '--disable', '--service', 'web-1', '--json'])).stdout)).toEqual({ ok: true, enabled: false, service: 'web-1' });
    expect(await checkIds()).not.toContain('_service_maintenance:web-1');
  });

  test('an unknown service exits 1 with the agent\'s message; contradictory flags exit 2 and send nothing', async () => {
    const unknown = await run(['maint', '--enable', '--service', 'nope']);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe('roster: unknown service ID "nope"\n');
    for (const args of [['--enable', '--disable'], ['--disable', '--reason', 'x'], ['--service', 'web-1'], ['--enable', '--service', '']]) {
      const r = await run(['maint', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
    }
    expect((await checkIds()).filter((id) => id.startsWith('_'))).toEqual([]);
  });
});

describe('catalog', () => {
  test('services: names with their tags (text and --json)', async () => {
    const text = await run(['catalog', 'services']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Service\s+Tags$/m);
    expect(text.stdout).toMatch(/^web\s+blue,v2$/m);
    expect(JSON.parse((await run(['catalog', 'services', '--json'])).stdout)).toMatchObject({ web: ['blue', 'v2'] });
  });

  test('nodes: name, id, address and datacenter (text and --json)', async () => {
    const text = await run(['catalog', 'nodes']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Node\s+ID\s+Address\s+DC$/m);
    expect(text.stdout).toMatch(/^node1\s+[0-9a-f-]{8}\s+\S+\s+dc1$/m);
    const json = JSON.parse((await run(['catalog', 'nodes', '--json'])).stdout) as { Node: string; Address: string }[];
    expect(json.map((n) => n.Node)).toEqual(['node1']);
    expect(json[0]!.Address).not.toBe('');
  });
});

describe('session renew', () => {
  test('prints the renewed session (text and --json); an unknown one exits 1', async () => {
    const id = await http.session({ Name: 'renewed', TTL: '30s' });
    const text = await run(['session', 'renew', id]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^ID\\s+${id}$`, 'm'));
    expect(text.stdout).toMatch(/^TTL\s+30s$/m);
    expect(JSON.parse((await run(['session', 'renew', id, '--json'])).stdout)).toMatchObject({ ID: id, Name: 'renewed', TTL: '30s' });
    const unknown = await run(['session', 'renew', '00000000-0000-0000-0000-000000000000']);
    expect(unknown).toMatchObject({ code: 1, stdout: '', stderr: 'roster: session "00000000-0000-0000-0000-000000000000" not found\n' });
    expect((await run(['session', 'renew'])).code).toBe(2);
  });
});
