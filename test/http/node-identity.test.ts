// Goal: a node ID names one node and a running agent owns its node, on started agents in both dialects.
// A catalog registration cannot take a live agent's ID under another name, nor give a live agent's name
// (in any case) another ID: refused (seed 400/1009 naming the field; consul Consul's 500 text) and nothing
// changes. An ID moved from a node that is not live renames it, as in Consul: the old node goes with its
// checks and the sessions bound to them. An agent whose node a client deregisters, or whose address or
// gossip check a client changes, registers itself again; one restarted under a new name on its data dir
// replaces its old node instead of leaving it behind, which ends every session of the old name (bound to a
// check or not, its locks released) and says in its log how many sessions, locks and services it ended. The data dir's node-id file: written whole on a
// first start; an empty one (lost to a crash) is replaced; one holding something else than a UUID stops
// the start (exit 2, naming the file) and is left as it is.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

interface NodeRow { Node: string; ID: string; Address: string }
const idOf = (agent: Agent) => readFileSync(join(agent.dataDir, 'node-id'), 'utf8').trim();
const register = (agent: Agent, body: Record<string, unknown>) => call(agent.url, 'PUT', '/v1/catalog/register', { Address: '10.0.0.7', ...body });
const nodes = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/catalog/nodes')).json() as NodeRow[];
const nodeNamed = async (agent: Agent, name: string) => (await nodes(agent)).find((n) => n.Node === name);

describe('catalog register: what a live agent holds', () => {
  test("a live agent's ID cannot be taken under another name", async () => {
    for (const agent of [seed, consul]) {
      const before = await nodes(agent);
      const r = await register(agent, { Node: 'thief', ID: idOf(agent).toUpperCase() });
      if (agent === seed) {
        expect(r.status, r.text).toBe(400);
        expect(r.json()).toMatchObject({ code: 1009, details: { ID: ['Unique:node ID belongs to the live node "node1"'] } });
      } else {
        expect([r.status, r.text]).toEqual([500, `Error while renaming Node ID: "${idOf(agent).toUpperCase()}": node node1 holding it is alive`]);
      }
      expect(await nodes(agent)).toEqual(before);
    }
  });

  test("a live agent's name, in any case, cannot be given another ID", async () => {
    const other = '11111111-2222-3333-4444-555555555555';
    for (const agent of [seed, consul]) {
      const before = await nodes(agent);
      for (const name of ['node1', 'NODE1']) {
        const r = await register(agent, { Node: name, ID: other });
        if (agent === seed) {
          expect(r.status, r.text).toBe(400);
          expect(r.json()).toMatchObject({ code: 1009, details: { Node: [`Unique:node name "${name}" belongs to the live node "node1" (${idOf(agent)})`] } });
        } else {
          expect([r.status, r.text]).toEqual([500, `Error while renaming Node ID: "${other}": Node name ${name} is reserved by node ${idOf(agent)} with name node1 (127.0.0.1)`]);
        }
      }
      expect(await nodes(agent)).toEqual(before);
    }
  });

  test('an ID moved from a node that is not live renames it: the old node goes with its checks and sessions', async () => {
    const id = '22222222-2222-3333-4444-555555555555';
    for (const agent of [seed, consul]) {
      expect((await register(agent, { Node: 'ext-old', ID: id, Check: { CheckID: 'up', Name: 'up', Status: 'passing' } })).status).toBe(200);
      const created = await call(agent.url, 'PUT', '/v1/session/create', { Node: 'ext-old', NodeChecks: ['up'] });
      expect(created.status, created.text).toBe(200);
      const session = created.json().ID as string;
      const r = await register(agent, { Node: 'ext-new', ID: id });
      expect([r.status, r.text]).toEqual([200, 'true']);
      expect(await nodeNamed(agent, 'ext-old')).toBeUndefined();
      expect(await nodeNamed(agent, 'ext-new')).toMatchObject({ ID: id });
      expect((await call(agent.url, 'GET', '/v1/health/node/ext-old')).json()).toEqual([]);
      expect((await call(agent.url, 'GET', `/v1/session/info/${session}`)).json()).toEqual([]);
      // The renamed node is not an agent (no gossip check): its name can be given another ID, as Consul allows.
      expect((await register(agent, { Node: 'ext-new', ID: '33333333-2222-3333-4444-555555555555' })).status).toBe(200);
    }
  });
});

describe('an agent owns its node', () => {
  test('deregistered, moved to another address or stripped of its gossip check, it registers itself again', async () => {
    for (const agent of [seed, consul]) {
      const own = await nodeNamed(agent, 'node1');
      expect(own).toMatchObject({ ID: idOf(agent), Address: '127.0.0.1' });
      const restored = () => until('the agent to register its node again', async () => {
        const n = await nodeNamed(agent, 'node1');
        const checks = (await call(agent.url, 'GET', '/v1/health/node/node1')).json() as { CheckID: string }[];
        return n?.Address === '127.0.0.1' && checks.some((c) => c.CheckID === 'gossipHealth') ? n : undefined;
      }, 5000);
      expect((await call(agent.url, 'PUT', '/v1/catalog/deregister', { Node: 'node1' })).status).toBe(200);
      expect(await restored()).toMatchObject({ ID: idOf(agent) });
      expect((await register(agent, { Node: 'node1', Address: '10.9.9.9' })).status).toBe(200);
      await restored();
      expect((await call(agent.url, 'PUT', '/v1/catalog/deregister', { Node: 'node1', CheckID: 'serfHealth' })).status).toBe(200);
      await restored();
      // Sessions on the agent's node work again.
      expect((await call(agent.url, 'PUT', '/v1/session/create', {})).status).toBe(200);
    }
  });

  test('restarted under a new name on its data dir, it replaces its old node, ending every session of the old name and saying how many', async () => {
    const first = await startAgent();
    try {
      expect(await nodeNamed(first, 'node1')).toMatchObject({ ID: idOf(first) });
      // Sessions of the old name, one bound to no check at all, holding a lock, and a service.
      const unbound = (await call(first.url, 'PUT', '/v1/session/create', { NodeChecks: [], TTL: '3600s' })).json<{ ID: string }>().ID;
      const bound = (await call(first.url, 'PUT', '/v1/session/create', {})).json<{ ID: string }>().ID;
      expect((await call(first.url, 'PUT', `/v1/kv/jobs/U?acquire=${unbound}`, 'x')).text).toBe('true');
      expect((await call(first.url, 'PUT', '/v1/agent/service/register', { ID: 'web-1', Name: 'web' })).status).toBe(200);
      await first.stop();
      const renamed = await startAgent({ dataDir: first.dataDir, args: ['--node-name', 'node9'] });
      try {
        const all = await nodes(renamed);
        expect(all.map((n) => [n.Node, n.ID])).toEqual([['node9', idOf(renamed)]]);
        expect(idOf(renamed)).toBe(idOf(first));
        const sessions = (await call(renamed.url, 'GET', '/v1/session/list')).json<{ ID: string }[]>().map((x) => x.ID);
        expect(sessions.filter((id) => id === unbound || id === bound)).toEqual([]);
        expect((await call(renamed.url, 'GET', '/v1/kv/jobs/U')).json<{ Session?: string }[]>()[0]?.Session).toBeUndefined();
        const warning = renamed.output().split('\n').find((l) => l.includes('this node\'s ID was held by another node: that node is removed from the catalog'));
        expect(warning).toBeDefined();
        expect(JSON.parse(warning!)).toMatchObject({ holder: 'node1', services: 1, sessions: 2, locks: 1 });
        expect(warning).toContain('its 2 session(s) are invalidated, every one, bound to checks or not');
      } finally { await renamed.stop(); }
    } finally { first.cleanup(); }
  });
});

describe('the node-id file', () => {
  test('a first start writes a UUID whole; an empty file is given a new ID', async () => {
    const dir = tempDataDir();
    const first = await startAgent({ dataDir: dir });
    const id = idOf(first);
    try {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(existsSync(join(dir, 'node-id.tmp'))).toBe(false);
    } finally { await first.stop(); }
    writeFileSync(join(dir, 'node-id'), '');
    const again = await startAgent({ dataDir: dir });
    try {
      const renewed = idOf(again);
      expect(renewed).toMatch(/^[0-9a-f-]{36}$/);
      expect(renewed).not.toBe(id);
      expect(await nodeNamed(again, 'node1')).toMatchObject({ ID: renewed });
    } finally { await again.stop(); rmSync(dir, { recursive: true, force: true }); }
  });

  test('a node-id that is not a UUID stops the start, naming the file, and is left as it is', async () => {
    const dir = tempDataDir();
    writeFileSync(join(dir, 'node-id'), 'web-7 (edited by hand)\n');
    const start = startAgent({ dataDir: dir });
    await expect(start).rejects.toThrow(/exited \(2\)/);
    await expect(start).rejects.toThrow(`${join(dir, 'node-id')} holds "web-7 (edited by hand)", which is not a node ID (a UUID)`);
    expect(readFileSync(join(dir, 'node-id'), 'utf8')).toBe('web-7 (edited by hand)\n');
    rmSync(dir, { recursive: true, force: true });
  });
});
