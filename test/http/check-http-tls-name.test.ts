// Goal: an HTTP check's TLSServerName is the server's name as Go's tls.Config.ServerName takes it: a host name
// goes as SNI, an IP address does not (RFC 6066; Go sends none, Node would send it and print DEP0123), and the
// certificate is checked against it either way. The target, on 127.0.0.1, serves a certificate for localhost,
// 127.0.0.1 and ::1, which the started agent trusts (NODE_EXTRA_CA_CERTS); it records each request's SNI.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { firstResult } from '../support/checks.ts';

const fixtures = new URL('../probes/fixtures/', import.meta.url);
const certPath = new URL('localhost-cert.pem', fixtures).pathname;
const sni: Array<string | false | null> = [];
let server: Server;
let url = '';
let agent: Agent;

beforeAll(async () => {
  server = createServer({ cert: readFileSync(certPath), key: readFileSync(new URL('localhost-key.pem', fixtures)) }, (req, res) => {
    sni.push((req.socket as TLSSocket).servername);
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://localhost:${(server.address() as AddressInfo).port}/`;
  agent = await startAgent({ env: { NODE_EXTRA_CA_CERTS: certPath } });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  server?.closeAllConnections();
  server?.close();
});

type Check = { Status: string; Output: string };

/** Registers an HTTPS check on the target and waits until it has an output. */
async function probe(id: string, tlsServerName: string): Promise<Check> {
  return firstResult(agent.url, id, { HTTP: url, TLSServerName: tlsServerName });
}

test('a host name goes as SNI', async () => {
  const check = await probe('named', 'localhost');
  expect(check).toMatchObject({ Status: 'passing', Output: `HTTP GET ${url}: 200 OK Output: ok` });
  expect(sni.at(-1)).toBe('localhost');
}, 20_000);

test('an IP address is not sent as SNI, and the certificate is checked against it', async () => {
  const requests = sni.length;
  const check = await probe('ip', '127.0.0.1');
  expect(check).toMatchObject({ Status: 'passing', Output: `HTTP GET ${url}: 200 OK Output: ok` });
  expect(sni.slice(requests)).not.toHaveLength(0);
  expect(sni.slice(requests).every((name) => name === false)).toBe(true);
  expect(agent.output()).not.toContain('DEP0123');
}, 20_000);

test('an IP address the certificate does not hold fails the handshake', async () => {
  const check = await probe('other-ip', '127.0.0.2');
  expect(check.Status).toBe('critical');
  expect(check.Output).toContain('127.0.0.2');
}, 20_000);
