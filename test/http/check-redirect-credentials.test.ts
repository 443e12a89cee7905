// Goal: an HTTP check's credential headers (Authorization, Cookie; WWW-Authenticate and Cookie2 too) follow a
// redirect only to the first request's host, on any port, or a subdomain of it, as Go's http.Client sends them
// for Consul's check; once a redirect has left that host they are not sent again on that probe, even where a
// later redirect comes back. The check's other headers follow every redirect; a 307 repeats method and body, a
// 302 turns the request into a bodiless GET. The targets record what each request brought, on two loopback
// addresses (127.0.0.1 and 127.0.0.2) of a started agent's checks.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';

interface Seen { at: string; path: string; method: string; authorization?: string; cookie?: string; trace?: string; body: string }

const seen: Seen[] = [];
const servers: Server[] = [];
let agent: Agent;
/** origin and samePort on 127.0.0.1, other on 127.0.0.2. */
const port = { origin: 0, samePort: 0, other: 0 };

function record(req: IncomingMessage, body: string): void {
  const h = req.headers;
  seen.push({
    at: `${req.socket.localAddress}:${req.socket.localPort}`, path: req.url ?? '', method: req.method ?? '', body,
    ...(h.authorization !== undefined ? { authorization: h.authorization } : {}),
    ...(h.cookie !== undefined ? { cookie: h.cookie } : {}),
    ...(h['x-trace'] !== undefined ? { trace: String(h['x-trace']) } : {}),
  });
}

/** `/<route>/<check id>`: each route answers a redirect that keeps the check id, or lands. */
function routes(path: string): { status: number; location?: string } {
  const [, route, id] = path.split('/');
  const other = `http://127.0.0.2:${port.other}`;
  switch (route) {
    case 'to-other-307': return { status: 307, location: `${other}/land/${id}` };
    case 'to-other-302': return { status: 302, location: `${other}/land/${id}` };
    case 'to-port': return { status: 307, location: `http://127.0.0.1:${port.samePort}/land/${id}` };
    case 'away-and-back': return { status: 302, location: `${other}/back/${id}` };
    case 'back': return { status: 302, location: `http://127.0.0.1:${port.origin}/land/${id}` };
    default: return { status: 200 };
  }
}

async function serve(host: string): Promise<number> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => {
      record(req, body);
      const { status, location } = routes(req.url ?? '/');
      res.writeHead(status, location === undefined ? {} : { Location: location }).end(status === 200 ? 'landed' : '');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  port.origin = await serve('127.0.0.1');
  port.samePort = await serve('127.0.0.1');
  port.other = await serve('127.0.0.2');
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  for (const s of servers) { s.closeAllConnections(); s.close(); }
});

const credentials = { Authorization: ['Bearer SECRET-TOKEN'], Cookie: ['sid=SECRET'], 'X-Trace': ['t1'] };

/** Registers a POST check with credentials on `/<route>/<id>` and waits for it to land. */
async function probeVia(route: string, id: string): Promise<Seen[]> {
  const url = `http://127.0.0.1:${port.origin}/${route}/${id}`;
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: id, Name: id, HTTP: url, Interval: '1s', Method: 'POST', Body: 'payload', Header: credentials });
  expect(r.status, r.text).toBe(200);
  for (let deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(100)) {
    const check = (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>()[id];
    if (check?.Status === 'passing') {
      expect(check.Output).toBe(`HTTP POST ${url}: 200 OK Output: landed`);
      expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/${id}`)).status).toBe(200);
      return seen.filter((s) => s.path.endsWith(`/${id}`));
    }
  }
  throw new Error(`check ${id} never landed: ${JSON.stringify(seen.filter((s) => s.path.endsWith(`/${id}`)))}`);
}

const first = { method: 'POST', body: 'payload', authorization: 'Bearer SECRET-TOKEN', cookie: 'sid=SECRET', trace: 't1' };

test('a 307 to another host repeats method, body and the other headers, but not Authorization or Cookie', async () => {
  const hops = await probeVia('to-other-307', 'c307');
  expect(hops[0]).toMatchObject({ at: `127.0.0.1:${port.origin}`, ...first });
  expect(hops[1]).toEqual({ at: `127.0.0.2:${port.other}`, path: '/land/c307', method: 'POST', body: 'payload', trace: 't1' });
}, 30_000);

test('a 302 to another host is a bodiless GET without Authorization or Cookie', async () => {
  const hops = await probeVia('to-other-302', 'c302');
  expect(hops[0]).toMatchObject({ at: `127.0.0.1:${port.origin}`, ...first });
  expect(hops[1]).toEqual({ at: `127.0.0.2:${port.other}`, path: '/land/c302', method: 'GET', body: '', trace: 't1' });
}, 30_000);

test('a redirect to the same host on another port keeps them', async () => {
  const hops = await probeVia('to-port', 'cport');
  expect(hops[1]).toEqual({ at: `127.0.0.1:${port.samePort}`, path: '/land/cport', ...first });
}, 30_000);

test('once a redirect has left the host, a redirect back to it does not bring them back', async () => {
  const hops = await probeVia('away-and-back', 'cback');
  expect(hops.slice(0, 3).map((h) => [h.at, h.path, h.authorization, h.cookie, h.trace])).toEqual([
    [`127.0.0.1:${port.origin}`, '/away-and-back/cback', 'Bearer SECRET-TOKEN', 'sid=SECRET', 't1'],
    [`127.0.0.2:${port.other}`, '/back/cback', undefined, undefined, 't1'],
    [`127.0.0.1:${port.origin}`, '/land/cback', undefined, undefined, 't1'],
  ]);
}, 30_000);
