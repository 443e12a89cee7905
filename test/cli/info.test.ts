// Goal: `roster info` against a started agent prints the agent's figures in `consul info`'s layout — the
// agent's own group, then raft, log and runtime, one `key = value` a line — whose indexes follow the
// agent's writes; `--json` prints /v1/agent/self. Its version is Roster's in both dialects; against the consul
// dialect it also shows the Consul release the agent reports (`consul_version`).
import { describe, expect, test } from 'vitest';
import { client, withAgent, type Agent } from '../support/agent.ts';
import { roster } from './support.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

describe('roster info', () => {
  test('groups of key = value lines; the indexes follow a write; --json is /v1/agent/self', async () => {
    expect((await client(agent).put('/v1/kv/info-test', 'v')).status).toBe(200);
    const index = Number((await client(agent).get('/v1/kv/info-test')).headers.get('x-consul-index'));
    const r = await roster(['info'], { agent: agent.url });
    expect(r.code).toBe(0);
    const groups = [...r.stdout.matchAll(/^(\w+):$/gm)].map((m) => m[1]);
    expect(groups).toEqual(['agent', 'raft', 'log', 'runtime']);
    expect(r.stdout).toMatch(/^agent:\n\tdatacenter = dc1\n\tdialect = seed\n\tnode_id = [0-9a-f-]{36}\n\tnode_name = node1\n\tversion = /);
    expect(r.stdout).toContain('\tstate = Leader\n');
    expect(Number(/\tapplied_index = (\d+)/.exec(r.stdout)![1])).toBeGreaterThanOrEqual(index);
    expect(r.stdout.trimEnd().split('\n').every((l) => /^\w+:$/.test(l) || /^\t\w+ = .*$/.test(l))).toBe(true);
    const json = await roster(['info', '--json'], { agent: agent.url });
    expect(JSON.parse(json.stdout)).toMatchObject({ Config: { NodeName: 'node1' }, Stats: { raft: { state: 'Leader' } } });
  });
});

describe('roster info against the consul dialect', () => {
  let consulAgent: Agent;
  withAgent((a) => { consulAgent = a; }, { args: ['--dialect', 'consul'] });

  test("version is Roster's own; consul_version the Consul release /v1/agent/self reports", async () => {
    const self = (await client(consulAgent).get('/v1/agent/self')).json<{ Config: { Version: string; RosterVersion: string } }>();
    const r = await roster(['info'], { agent: consulAgent.url });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^agent:\n\tconsul_version = (\S+)\n\tdatacenter = dc1\n\tdialect = consul\n/);
    expect(r.stdout).toContain(`\tconsul_version = ${self.Config.Version}\n`);
    expect(r.stdout).toContain(`\tversion = ${self.Config.RosterVersion}\n`);
    expect(self.Config.Version).not.toBe(self.Config.RosterVersion);
  });
});
