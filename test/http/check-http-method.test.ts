// Goal: an HTTP check sends its Method as given, as Consul's check does (Go's client sends the method as it
// is, where Node's upper-cases it): `post` goes on the wire as `post`, and the check's output and error texts
// name it so. A bodiless request carries `Content-Length: 0` by Go's rule, for POST, PUT and PATCH as
// spelled so only. The target is a raw TCP server, since Node's HTTP parser takes upper-case methods only; it
// records each request's head. The checks run on a started agent.
import net, { type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, expectError, startAgent, type Agent } from '../support/agent.ts';
import { firstResult } from '../support/checks.ts';
import { closedPort } from '../probes/servers.ts';

interface Head { line: string; headers: Record<string, string> }

const heads = new Map<string, Head>();
let server: Server;
let port = 0;
let agent: Agent;

/** Reads a request's head, keeps it by its path, answers 200 `ok` and closes. */
function serve(socket: net.Socket): void {
  let text = '';
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return;
    const [line = '', ...fields] = text.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]));
    heads.set(line.split(' ')[1] ?? '', { line, headers });
    socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
  });
}

beforeAll(async () => {
  server = net.createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  server?.close();
});

type Check = { Status: string; Output: string };

/** Registers an HTTP check and waits until it has an output. */
async function probe(id: string, url: string, extra: Record<string, unknown>): Promise<Check> {
  return firstResult(agent.url, id, { HTTP: url, ...extra });
}

test.each([
  ['post', undefined],
  ['Purge', undefined],
  ['POST', '0'],
  ['PATCH', '0'],
  ['get', undefined],
])('Method %s is sent as given, Content-Length %s', async (method, length) => {
  const url = `http://127.0.0.1:${port}/m-${method}`;
  const check = await probe(`m-${method}`, url, { Method: method });
  expect(check).toEqual(expect.objectContaining({ Status: 'passing', Output: `HTTP ${method} ${url}: 200 OK Output: ok` }));
  const head = heads.get(`/m-${method}`);
  expect(head?.line).toBe(`${method} /m-${method} HTTP/1.1`);
  expect(head?.headers['content-length']).toBe(length);
}, 20_000);

test('a body goes with its length whatever the method', async () => {
  const url = `http://127.0.0.1:${port}/with-body`;
  await probe('with-body', url, { Method: 'put', Body: 'abc' });
  expect(heads.get('/with-body')).toMatchObject({ line: 'put /with-body HTTP/1.1', headers: { 'content-length': '3' } });
}, 20_000);

test('a failed request names the method as Go\'s url.Error does: its first letter as given, the rest lower-case', async () => {
  const closed = await closedPort();
  const url = `http://127.0.0.1:${closed}/`;
  for (const [method, op] of [['pOST', 'post'], ['DELETE', 'Delete']] as const) {
    const check = await probe(`fail-${method}`, url, { Method: method });
    expect(check).toEqual(expect.objectContaining({
      Status: 'critical', Output: `${op} "${url}": dial tcp 127.0.0.1:${closed}: connect: connection refused`,
    }));
  }
}, 20_000);

test('a Method that is not an HTTP token is still refused at registration', async () => {
  const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: 'bad-method', Name: 'bad', HTTP: `http://127.0.0.1:${port}/`, Interval: '1s', Method: 'G T' });
  expect(expectError(r, 400, 1009).details.Method).toEqual([expect.stringMatching(/^Format:"G T" is not an HTTP method/)]);
});
