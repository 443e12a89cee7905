// Goal: a plain `GET /v1/stream` (no upgrade) answers the verdict the WebSocket upgrade gives the same
// token, in both dialects, against started agents with real `ws` clients beside it: no token or an invalid
// one is the upgrade's 401 (the consul dialect's 403 `ACL not found`), a token whose rules read nothing a
// topic shows its 403 (1004, `Permission denied`), and a token the upgrade lets in (read on keys only,
// without agent read) 426 Upgrade Required with `Upgrade: websocket`, saying to upgrade. Without
// authentication the answer is 426, and 403 for a page of another origin, as the upgrade's is. `/v1/stream/`
// (a final slash) is the same endpoint: its upgrade opens or is refused as `/v1/stream`'s, never a 426.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { streamSubprotocol, writeConfigFile } from '../support/stream-load.ts';

const secret = 'a-stream-probe-secret-that-is-long-enough';
const tokens = new TokenAuthority({ secret });
const mint = (rules: Rule[]) => tokens.mint({ subject: 'probe', rules, ttlSeconds: 600 });

const agents: Record<'seed' | 'consul' | 'open', Agent | undefined> = { seed: undefined, consul: undefined, open: undefined };

beforeAll(async () => {
  const auth = writeConfigFile({ auth: { jwt_secret: secret } });
  [agents.seed, agents.consul, agents.open] = await Promise.all([
    startAgent({ args: ['--config-file', auth] }),
    startAgent({ args: ['--config-file', auth, '--dialect', 'consul'] }),
    startAgent({ args: ['--dialect', 'consul'] }),
  ]);
});
afterAll(async () => {
  for (const a of Object.values(agents)) { await a?.stop(); a?.cleanup(); }
});

/** The upgrade's answer: 101 when it opened (closed again at once), else the refusal's status. */
function upgradeStatus(agent: Agent, headers: Record<string, string>, path = '/v1/stream'): Promise<number> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}${path}`, [streamSubprotocol], { headers });
  ws.on('error', () => { /* reported through the outcome */ });
  return new Promise((resolve, reject) => {
    ws.once('open', () => { ws.close(); resolve(101); });
    ws.once('unexpected-response', (_req, res) => { res.resume(); resolve(res.statusCode ?? 0); });
    ws.once('error', reject);
  });
}

const probe = (agent: Agent, headers: Record<string, string>) => call(agent.url, 'GET', '/v1/stream', undefined, headers);
const bearer = async (rules: Rule[]) => ({ authorization: `Bearer ${await mint(rules)}` });

describe.each(['seed', 'consul'] as const)('with authentication on, %s dialect', (dialect) => {
  const refusedStatus = dialect === 'seed' ? 401 : 403;

  test('no token, or an invalid one: what the upgrade answers, in the dialect\'s error format', async () => {
    const agent = agents[dialect]!;
    for (const headers of [{}, { authorization: 'Bearer not-a-jwt' }] as Record<string, string>[]) {
      const res = await probe(agent, headers);
      expect(res.status).toBe(refusedStatus);
      expect(await upgradeStatus(agent, headers)).toBe(refusedStatus);
      if (dialect === 'seed') expect(res.json()).toMatchObject({ code: 'authorization' in headers ? 1021 : 1002 });
      else expect(res.text).toBe('ACL not found');
    }
  });

  test('a token that reads nothing a topic shows: 403, as the upgrade', async () => {
    const agent = agents[dialect]!;
    const headers = await bearer([{ resource: 'agent', prefix: '', access: 'read' }]);
    const res = await probe(agent, headers);
    expect(res.status).toBe(403);
    expect(await upgradeStatus(agent, headers)).toBe(403);
    if (dialect === 'seed') expect(res.json()).toMatchObject({ code: 1004, message: expect.stringMatching(/service, node, session or key/) });
    else expect(res.text).toBe('Permission denied');
  });

  test('a token the upgrade lets in (keys only, no agent read): 426 saying to upgrade', async () => {
    const agent = agents[dialect]!;
    const headers = await bearer([{ resource: 'key', prefix: 'app/', access: 'read' }]);
    const res = await probe(agent, headers);
    expect(res.status).toBe(426);
    expect(res.headers.get('upgrade')).toBe('websocket');
    expect(res.headers.get('sec-websocket-version')).toBe('13');
    expect(res.text).toMatch(/WebSocket/);
    if (dialect === 'seed') expect(res.json()).toMatchObject({ code: 1022, details: { upgrade: 'websocket', version: '13' } });
    expect(await upgradeStatus(agent, headers)).toBe(101);
    // The token in `?token=`, as the upgrade also takes it.
    const inQuery = await call(agent.url, 'GET', `/v1/stream?token=${headers.authorization.slice('Bearer '.length)}`);
    expect(inQuery.status).toBe(426);
  });

  test('/v1/stream/ (a final slash) is the same endpoint: its upgrade opens, or is refused, as /v1/stream\'s', async () => {
    const agent = agents[dialect]!;
    const reader = await bearer([{ resource: 'key', prefix: 'app/', access: 'read' }]);
    const nothing = await bearer([{ resource: 'agent', prefix: '', access: 'read' }]);
    expect(await upgradeStatus(agent, reader, '/v1/stream/')).toBe(101);
    expect(await upgradeStatus(agent, {}, '/v1/stream/')).toBe(refusedStatus);
    expect(await upgradeStatus(agent, nothing, '/v1/stream/')).toBe(403);
    expect((await call(agent.url, 'GET', '/v1/stream/', undefined, reader)).status).toBe(426);
  });
});

describe('without authentication', () => {
  test('426 Upgrade Required; a page of another origin is refused 403, as its upgrade is', async () => {
    const agent = agents.open!;
    const res = await probe(agent, {});
    expect(res.status).toBe(426);
    expect(res.text).toMatch(/upgrade with Sec-WebSocket-Version 13/);
    expect(await upgradeStatus(agent, {})).toBe(101);
    const foreign = { origin: 'https://elsewhere.example' };
    expect((await probe(agent, foreign)).status).toBe(403);
    expect(await upgradeStatus(agent, foreign)).toBe(403);
  });

  test('/v1/stream/ (a final slash) opens the stream, whose subscriptions are served as on /v1/stream', async () => {
    const agent = agents.open!;
    expect(await upgradeStatus(agent, { origin: 'https://elsewhere.example' }, '/v1/stream/')).toBe(403);
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream/`, [streamSubprotocol]);
    const types: string[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      ws.on('message', (d) => {
        const m = JSON.parse(d.toString()) as { type: string };
        types.push(m.type);
        if (m.type === 'end_of_snapshot') resolve();
      });
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
    ws.once('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 'self', topic: 'serving_status', key: '' })));
    await ended;
    ws.close();
    expect(types).toEqual(['subscribed', 'snapshot', 'end_of_snapshot']);
  });
});
