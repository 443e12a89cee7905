// Goal: the Host check against DNS rebinding (http_allowed_hosts), through started agents. An agent on a
// loopback address answers a request naming another host 421 Misdirected Request — GET, PUT (nothing
// written), the dashboard and the stream's upgrade alike, seed 1022 naming the setting, consul dialect plain
// text — and serves IP literals, localhost, names under .localhost and the machine's own name. The setting
// (config file key or --http-allowed-hosts) names more hosts: exactly, `.domain` for a domain and its
// names, `*` for every host; a name it does not hold is refused, the machine's name included. An agent on
// a non-loopback address accepts every Host by default. A refused request is counted nowhere: not against
// the client's requests in flight (a page cannot fill its visitor's cap) nor against the rate limit.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { call, startAgent, withAgent, type Agent } from '../support/agent.ts';
import { rawExchange, type RawAnswer } from '../support/raw-http.ts';
import { subprotocol } from '../support/stream.ts';

const rebound = 'rebind.attacker.test';
const dir = mkdtempSync(join(tmpdir(), 'roster-hosts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, settings: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

/** One request sent with `host` as its Host header (as a rebinding page's browser sends it), its answer. */
async function ask(agent: Agent, host: string, method = 'GET', path = '/v1/status/leader', body = ''): Promise<RawAnswer> {
  const length = method === 'PUT' ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : '';
  const got = await rawExchange(agent.url, `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${length}\r\n${body}`);
  expect(got.answers, `${method} ${path} Host: ${host}`).toHaveLength(1);
  return got.answers[0]!;
}

const port = (agent: Agent) => new URL(agent.url).port;

function expectRefusedSeed(answer: RawAnswer, host: string): void {
  expect(answer.status, host).toBe(421);
  expect(JSON.parse(answer.body)).toMatchObject({ code: 1022, message: expect.stringContaining('http_allowed_hosts'), details: { host, setting: 'http_allowed_hosts' } });
}

/** The stream's upgrade asked with `host` as its Host: the HTTP status of the answer (101 when it upgraded). */
function upgradeStatus(agent: Agent, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port(agent)}/v1/stream`, [subprotocol], { headers: { Host: host } });
    ws.once('open', () => { ws.close(); resolve(101); });
    ws.once('unexpected-response', (req, res) => { req.destroy(); resolve(res.statusCode ?? 0); });
    ws.once('error', reject);
  });
}

describe('an agent on a loopback address, no setting', () => {
  let agent: Agent;
  const settings = { limits: { http_max_conns_per_client: 3 }, rate_limit: { requests: 1000, period: '600s' } };
  withAgent((a) => { agent = a; }, { args: ['--config-file', configFile('loopback.json', settings)] });

  test('a rebound Host is refused 421 for GET, PUT (nothing written), the dashboard and the stream\'s upgrade', async () => {
    const host = `${rebound}:${port(agent)}`;
    expectRefusedSeed(await ask(agent, host), host);
    expectRefusedSeed(await ask(agent, host, 'PUT', '/v1/kv/rebound', 'owned'), host);
    expectRefusedSeed(await ask(agent, host, 'GET', '/ui/'), host);
    expectRefusedSeed(await ask(agent, rebound.toUpperCase()), rebound.toUpperCase());
    expect((await call(agent.url, 'GET', '/v1/kv/rebound')).status).toBe(404);
    expect(await upgradeStatus(agent, host)).toBe(421);
    expect(await upgradeStatus(agent, `127.0.0.1:${port(agent)}`)).toBe(101);
  });

  test('IP literals, localhost, names under .localhost and the machine\'s own name are served', async () => {
    const p = port(agent);
    for (const host of [`127.0.0.1:${p}`, '127.0.0.1', `[::1]:${p}`, '10.1.2.3', `localhost:${p}`, 'LOCALHOST', 'localhost.', `app.localhost:${p}`, `${hostname()}:${p}`]) {
      expect((await ask(agent, host)).status, host).toBe(200);
    }
    expect((await ask(agent, `localhost:${p}`, 'PUT', '/v1/kv/local', 'mine')).status).toBe(200);
    expect(await upgradeStatus(agent, `localhost:${p}`)).toBe(101);
    // Not a host at all: refused too.
    for (const host of ['[zz]:1', 'localhost:http']) expect((await ask(agent, host)).status, host).toBe(421);
  });

  test('a refused Host is not counted against the rate limit', async () => {
    const remaining = async () => Number((await ask(agent, 'localhost')).headers['x-rate-limit-remaining']);
    const before = await remaining();
    for (let i = 0; i < 5; i += 1) expectRefusedSeed(await ask(agent, rebound), rebound);
    expect(await remaining()).toBe(before - 1);
  });

  test('a refused Host is not counted against the client\'s requests in flight', async () => {
    const index = (await call(agent.url, 'GET', '/v1/kv/held')).headers.get('x-consul-index');
    // The cap's three requests in flight, held by blocking queries for up to 3 s.
    const held = [0, 1, 2].map(() => rawExchange(agent.url, `GET /v1/kv/held?index=${index}&wait=3s HTTP/1.1\r\nHost: localhost\r\n\r\n`, { waitMs: 10_000 }));
    let over: RawAnswer | undefined;
    for (let i = 0; i < 50 && over?.status !== 429; i += 1) over = await ask(agent, 'localhost');
    expect(over?.status, 'the cap is full').toBe(429);
    // A page's request for the agent by its own name is refused before it is counted: 421, not 429.
    expectRefusedSeed(await ask(agent, rebound, 'GET', `/v1/kv/held?index=${index}&wait=3s`), rebound);
    for (const got of await Promise.all(held)) expect(got.answers[0]?.status).toBe(404);
  });
});

describe('the setting names the hosts (consul dialect)', () => {
  let agent: Agent;
  withAgent((a) => { agent = a; }, {
    args: ['--dialect', 'consul', '--config-file', configFile('named.json', { http_allowed_hosts: ['roster.example', '.corp.example'] })],
  });

  test('a name, a domain and its names are served; another name and the machine\'s own are refused in plain text', async () => {
    for (const host of ['roster.example:8500', 'ROSTER.example', 'corp.example', 'a.b.corp.example:1', '127.0.0.1', 'localhost']) {
      expect((await ask(agent, host)).status, host).toBe(200);
    }
    for (const host of ['other.example', 'roster.example.evil', 'xcorp.example', `${hostname()}:8500`]) {
      const refused = await ask(agent, host, 'PUT', '/v1/kv/named', 'x');
      expect(refused.status, host).toBe(421);
      expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(refused.body).toBe(`Host ${JSON.stringify(host)} is not allowed: add it to http_allowed_hosts\n`);
    }
    expect((await call(agent.url, 'GET', '/v1/kv/named')).status).toBe(404);
  });
});

describe('an agent on a non-loopback address', () => {
  let agent: Agent;
  withAgent((a) => { agent = a; }, { args: ['--http-host', '0.0.0.0'] });

  test('accepts every Host when the setting is not given', async () => {
    expect((await ask(agent, rebound, 'PUT', '/v1/kv/open', 'x')).status).toBe(200);
    expect(await upgradeStatus(agent, rebound)).toBe(101);
  });
});

describe('--http-allowed-hosts', () => {
  let agent: Agent;
  withAgent((a) => { agent = a; }, { args: ['--http-allowed-hosts', '*'] });

  test('* accepts every Host on a loopback address', async () => {
    expect((await ask(agent, rebound, 'PUT', '/v1/kv/every', 'x')).status).toBe(200);
  });

  test('a value that is no host name stops the start (exit 2) naming it', async () => {
    const failed = await startAgent({ args: ['--http-allowed-hosts', 'roster.example:8500'] }).then(async (a) => { await a.stop(); a.cleanup(); return ''; }, (err: Error) => err.message);
    expect(failed).toMatch(/exited \(2\)/);
    expect(failed).toContain('--http-allowed-hosts: "roster.example:8500" is not a host name');
  });
});
