// Goal: the TCP probe passes on a listening loopback port and fails with Go's dial error text on a closed one or a bad address.
import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { tcpProbe } from '../../src/probes/index.ts';
import { closedPort, listen } from './servers.ts';

let port = 0;
let port6: number | undefined;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const v4 = await listen(net.createServer((socket) => socket.end()));
  port = v4.port;
  closers.push(v4.close);
  try {
    const v6 = await listen(net.createServer((socket) => socket.end()), '::1');
    port6 = v6.port;
    closers.push(v6.close);
  } catch {
    port6 = undefined; // no IPv6 loopback on this machine
  }
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

test('a listening port → passing "TCP connect <addr>: Success"', async () => {
  expect(await tcpProbe({ address: `127.0.0.1:${port}` })()).toEqual({ status: 'passing', output: `TCP connect 127.0.0.1:${port}: Success` });
});

test('a bracketed IPv6 address', async () => {
  if (port6 === undefined) return;
  expect(await tcpProbe({ address: `[::1]:${port6}` })()).toEqual({ status: 'passing', output: `TCP connect [::1]:${port6}: Success` });
});

test('a closed port → critical with the dial error', async () => {
  const closed = await closedPort();
  expect(await tcpProbe({ address: `127.0.0.1:${closed}` })()).toEqual({
    status: 'critical',
    output: `dial tcp 127.0.0.1:${closed}: connect: connection refused`,
  });
});

test('an address without a port never dials', async () => {
  expect(await tcpProbe({ address: '127.0.0.1' })()).toEqual({ status: 'critical', output: 'dial tcp: address 127.0.0.1: missing port in address' });
  expect(await tcpProbe({ address: '::1:80' })()).toEqual({ status: 'critical', output: 'dial tcp: address ::1:80: too many colons in address' });
});

test('an aborted probe is critical at once', async () => {
  const controller = new AbortController();
  controller.abort();
  expect(await tcpProbe({ address: `127.0.0.1:${port}` })(controller.signal)).toEqual({
    status: 'critical',
    output: `dial tcp 127.0.0.1:${port}: operation was canceled`,
  });
});
