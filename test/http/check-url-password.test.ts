// Goal: an HTTP check's output never shows the password of a URL, as Go's http.Client writes URLs in its
// errors (`user:***@`): not for the check's URL, in a failed request's output or in a passing one's, and not
// for a Location redirected to; a user without a password is shown as written. The request still sends the
// credentials. Checks of a started agent against a loopback target that records each Authorization header,
// and against a port where nothing listens.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { firstResult } from '../support/checks.ts';

let agent: Agent;
let server: Server;
let port = 0;
const authorizations: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '');
    if (req.url === '/away') res.writeHead(302, { Location: 'http://other:hidden@127.0.0.1:1/' }).end();
    else res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  server?.close();
});

/** Registers an HTTP check and returns its first output. */
async function outputOf(id: string, url: string): Promise<string> {
  return (await firstResult(agent.url, id, { HTTP: url })).Output;
}

test('a failed request shows the URL with its password hidden', async () => {
  const output = await outputOf('refused', 'http://user:secret@127.0.0.1:1/health');
  expect(output).toBe('Get "http://user:***@127.0.0.1:1/health": dial tcp 127.0.0.1:1: connect: connection refused');
}, 20_000);

test('a passing check shows it hidden too, and still sends the credentials', async () => {
  const output = await outputOf('answered', `http://user:secret@127.0.0.1:${port}/`);
  expect(output).toBe(`HTTP GET http://user:***@127.0.0.1:${port}/: 200 OK Output: ok`);
  expect(authorizations.at(-1)).toBe(`Basic ${Buffer.from('user:secret').toString('base64')}`);
}, 20_000);

test('a Location redirected to is shown without its password', async () => {
  const output = await outputOf('redirected', `http://127.0.0.1:${port}/away`);
  expect(output).toBe('Get "http://other:***@127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused');
}, 20_000);

test('a user without a password is shown as written', async () => {
  const output = await outputOf('user-only', 'http://user@127.0.0.1:1/');
  expect(output).toBe('Get "http://user@127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused');
}, 20_000);
