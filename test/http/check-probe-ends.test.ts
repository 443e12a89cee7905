// Goal: every probe of a started agent ends by its timeout and gives back its probe slot, whatever the target
// answers. A target answering `101 Switching Protocols` hands the connection over: the check is critical with
// the 101 status line and what came on the connection (as Go reads it for Consul's check), probed again at
// every interval, and, with limits.check_probes_max 2, two such checks leave the agent's other checks their
// turns; once they are deregistered no probe is left running.
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let agent: Agent;
const sockets = new Set<Socket>();
const servers: Array<Server | HttpServer> = [];
const hits = { held: 0, closed: 0, ok: 0 };
const url = { held: '', closed: '', ok: '' };

/** A raw target answering every request with a 101; `then` decides what follows on the connection. */
async function switching(name: 'held' | 'closed', then: (s: Socket) => void): Promise<void> {
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('data', () => {
      hits[name]++;
      s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
      then(s);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

const metric = async (name: string) => {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text;
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
};
const checks = async () => (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>();
const register = async (body: object) => {
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', body);
  expect(r.status, r.text).toBe(200);
};

beforeAll(async () => {
  // One keeps the connection open and says nothing more: only the probe's timeout ends its read.
  await switching('held', () => {});
  // One sends a few bytes over the switched connection and closes it.
  await switching('closed', (s) => s.end('hello'));
  const ok = createHttpServer((_req, res) => { hits.ok++; res.end('fine'); });
  servers.push(ok);
  await new Promise<void>((resolve) => ok.listen(0, '127.0.0.1', resolve));
  url.ok = `http://127.0.0.1:${(ok.address() as AddressInfo).port}/`;
  const config = join(tempDataDir(), 'agent.json');
  writeFileSync(config, JSON.stringify({ limits: { check_probes_max: 2 } }));
  agent = await startAgent({ args: ['--config-file', config] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
});

test('a 101 is critical with its status line and ends at the timeout; other checks keep their turns; deregistered, nothing runs', async () => {
  await register({ ID: 'ok', Name: 'ok', HTTP: url.ok, Interval: '1s' });
  await register({ ID: 'held-a', Name: 'held-a', HTTP: url.held, Interval: '1s', Timeout: '1s' });
  await register({ ID: 'held-b', Name: 'held-b', HTTP: url.held, Interval: '1s', Timeout: '1s' });
  await register({ ID: 'closed', Name: 'closed', HTTP: url.closed, Interval: '1s', Timeout: '5s' });

  const want = {
    'held-a': { Status: 'critical', Output: `HTTP GET ${url.held}: 101 Switching Protocols Output: ` },
    'held-b': { Status: 'critical', Output: `HTTP GET ${url.held}: 101 Switching Protocols Output: ` },
    closed: { Status: 'critical', Output: `HTTP GET ${url.closed}: 101 Switching Protocols Output: hello` },
    ok: { Status: 'passing', Output: `HTTP GET ${url.ok}: 200 OK Output: fine` },
  };
  let seen: Record<string, { Status: string; Output: string }> = {};
  for (let deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
    seen = await checks();
    if (Object.entries(want).every(([id, w]) => seen[id]?.Status === w.Status && seen[id]?.Output === w.Output)) break;
  }
  expect(seen).toMatchObject(want);

  // Probed again and again: each held probe ends at its 1 s timeout, and the ok check is probed meanwhile.
  const before = { ...hits };
  await sleep(6000);
  expect(hits.held - before.held).toBeGreaterThanOrEqual(4);
  expect(hits.closed - before.closed).toBeGreaterThanOrEqual(3);
  expect(hits.ok - before.ok).toBeGreaterThanOrEqual(3);

  for (const id of ['held-a', 'held-b', 'closed', 'ok']) expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/${id}`)).status).toBe(200);
  let running = NaN;
  for (let deadline = Date.now() + 5000; Date.now() < deadline; await sleep(100)) if ((running = await metric('roster_check_probes_running')) === 0) break;
  expect(running).toBe(0);
  expect(await metric('roster_check_probes_waiting')).toBe(0);
}, 40_000);
