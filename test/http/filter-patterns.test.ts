// Goal: `matches` patterns in ?filter= can never stall the agent. Patterns that backtrack catastrophically in
// JavaScript's RegExp (and that V8's linear engine cannot run) answer promptly on a really started agent, with
// RE2's answer or a 400, while /v1/status/leader keeps answering. A stalled agent shows up as a test that times
// out: no timing is asserted. The agent is a process of its own, as a stall in the test's process could not
// be timed out.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';

/** Generous: each request takes milliseconds; only a stalled agent gets near it. */
const stallTimeoutMs = 60_000;

const q = (filter: string) => `filter=${encodeURIComponent(filter)}`;

describe('?filter= matches patterns on a started agent', () => {
  let agent: Agent;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    agent = await startAgent();
    c = client(agent);
    const nodes = [
      { Node: 'bang', Address: '10.0.0.2', NodeMeta: { x: `${'a'.repeat(30)}!`, y: `${'a'.repeat(26)}!` } },
      { Node: 'plain', Address: '10.0.0.3', NodeMeta: { x: 'a'.repeat(30), y: 'A'.repeat(26) } },
    ];
    for (const node of nodes) {
      const check = { CheckID: `out-${node.Node}`, Name: 'output', Status: 'passing', Output: 'x'.repeat(4096) };
      const r = await c.put('/v1/catalog/register', { ...node, Check: check });
      expect(r.status, r.text).toBe(200);
    }
  });

  afterAll(async () => {
    // A stalled agent ignores SIGTERM (its event loop never runs the handler): then it is killed.
    const stopped = await Promise.race([agent?.stop().then(() => true), sleep(10_000).then(() => false)]);
    if (!stopped) await agent?.kill9();
    agent?.cleanup();
  });

  /** GETs `path` while asking /v1/status/leader three times; every leader answer must be a 200. */
  async function alongsideLeader(path: string) {
    const leaders = async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await c.get('/v1/status/leader')).status);
      return statuses;
    };
    const [answer, statuses] = await Promise.all([c.get(path), leaders()]);
    expect(statuses).toEqual([200, 200, 200]);
    return answer;
  }

  const names = (r: { json(): unknown }) => (r.json() as { Node: string }[]).map((n) => n.Node).sort();

  test('ID matches "(?i)(.+)+Z" on /v1/catalog/nodes: 200, no node (IDs are hex)', { timeout: stallTimeoutMs }, async () => {
    const r = await alongsideLeader(`/v1/catalog/nodes?${q('ID matches "(?i)(.+)+Z"')}`);
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual([]);
  });

  test('Output matches "(.+){2,40}Z" on /v1/health/state/any: 200, no check', { timeout: stallTimeoutMs }, async () => {
    const r = await alongsideLeader(`/v1/health/state/any?${q('Output matches "(.+){2,40}Z"')}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toEqual([]);
    const some = await alongsideLeader(`/v1/health/state/any?${q('Output matches "(.+){2,40}x$"')}`);
    expect((some.json() as { CheckID: string }[]).map((k) => k.CheckID).sort()).toEqual(['out-bang', 'out-plain']);
  });

  test('Meta.x matches "(a+){2,30}$": only the node whose value ends in a', { timeout: stallTimeoutMs }, async () => {
    const r = await alongsideLeader(`/v1/catalog/nodes?${q('Meta.x matches "(a+){2,30}$"')}`);
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(['plain']);
  });

  test('Meta.y matches "(?i)(a+)+$" against 26 a\'s and "!": only the node of 26 A\'s', { timeout: stallTimeoutMs }, async () => {
    const r = await alongsideLeader(`/v1/catalog/nodes?${q('Meta.y matches "(?i)(a+)+$"')}`);
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(['plain']);
  });

  test('a backreference, a lookahead and a pattern too large to compile are 400/1009 naming what is refused', { timeout: stallTimeoutMs }, async () => {
    const refused = async (pattern: string, named: string) => {
      const body = expectError(await alongsideLeader(`/v1/catalog/nodes?${q(`Meta.x matches \`${pattern}\``)}`), 400, 1009);
      expect(body.message).toContain(named);
    };
    await refused('(a+)\\1', 'invalid escape sequence: `\\1`');
    await refused('(?=a+)a', 'invalid or unsupported Perl syntax: `(?=`');
    await refused('(?:a|aa){0,1000}$', 'expression too large');
    await refused('(?:a|aa){0,1000}$', '{0,1000}');
  });
});
