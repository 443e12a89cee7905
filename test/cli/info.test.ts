// Goal: `roster info` against a started agent prints the agent's figures in `consul info`'s layout — the
// agent's own group, then raft, log and runtime, one `key = value` a line — whose indexes follow the
// agent's writes; `--json` prints /v1/agent/self.
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
