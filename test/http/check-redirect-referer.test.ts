// Goal: an HTTP check that follows a redirect sends a Referer on the next request, as Go's http.Client does
// for Consul's check: the URL of the request redirected (the check's URL as written, then each resolved
// Location), without its user and password; none from https to http; a Referer among the check's headers is
// sent instead, on every request. The targets, an http and an https server on loopback, record the Referer of
// each request of a started agent's checks.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';
import { tls } from '../probes/servers.ts';

/** Path → the Referer its request brought ('' for none). */
const referers = new Map<string, string>();
const servers: Server[] = [];
let agent: Agent;
let plain = '';
let secure = '';

/** `/<route>/<id>`: a redirect that keeps the check id, or 200 `landed`. */
function answer(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').replace(/\?.*/, '');
  referers.set(path, req.headers.referer ?? '');
  const [, route, id] = path.split('/');
  const to = (location: string): void => { res.writeHead(302, { Location: location }).end(); };
  switch (route) {
    case 'start': return to(`/middle/${id}`);
    case 'middle': return to(`${plain}/land/${id}`);
    case 'secure-to-plain': return to(`${plain}/land/${id}`);
    case 'secure-to-secure': return to(`${secure}/land/${id}`);
    default: res.end('landed');
  }
}

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  plain = `http://127.0.0.1:${await listen(createServer(answer))}`;
  secure = `https://127.0.0.1:${await listen(createHttpsServer({ ...tls }, answer))}`;
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  for (const s of servers) s.close();
});

/** Registers a check and waits for it to land on `/land/<id>`. */
async function follow(id: string, url: string, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: id, Name: id, HTTP: url, Interval: '1s', TLSSkipVerify: true, ...extra });
  expect(r.status, r.text).toBe(200);
  for (let deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    const check = (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>()[id];
    if (check?.Status === 'passing') {
      // The output shows the URL without its password (check-url-password.test.ts).
      expect(check.Output).toBe(`HTTP GET ${url.replace(':secret@', ':***@')}: 200 OK Output: landed`);
      expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/${id}`)).status).toBe(200);
      return;
    }
  }
  throw new Error(`check ${id} never landed: ${JSON.stringify([...referers])}`);
}

test('each redirected request sends the URL it was redirected from: as written, then as resolved', async () => {
  await follow('r1', `${plain}/start/r1?x=1#top`);
  expect([referers.get('/start/r1'), referers.get('/middle/r1'), referers.get('/land/r1')])
    .toEqual(['', `${plain}/start/r1?x=1#top`, `${plain}/middle/r1`]);
}, 20_000);

test('the Referer leaves out the URL\'s user and password', async () => {
  await follow('r2', `${plain.replace('://', '://user:secret@')}/start/r2`);
  expect(referers.get('/middle/r2')).toBe(`${plain}/start/r2`);
}, 20_000);

test('a Referer among the check\'s headers is sent on every request instead', async () => {
  await follow('r3', `${plain}/start/r3`, { Header: { Referer: ['https://mine.test/'] } });
  expect([referers.get('/start/r3'), referers.get('/middle/r3'), referers.get('/land/r3')]).toEqual(Array(3).fill('https://mine.test/'));
}, 20_000);

test('from https to http no Referer is sent; from https to https it is', async () => {
  await follow('r4', `${secure}/secure-to-plain/r4`);
  expect(referers.get('/land/r4')).toBe('');
  await follow('r5', `${secure}/secure-to-secure/r5`);
  expect(referers.get('/land/r5')).toBe(`${secure}/secure-to-secure/r5`);
}, 20_000);
