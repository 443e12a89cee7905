// Goal: a gRPC check with GRPCUseTLS uses its TLSServerName as Consul's does (Go's tls.Config.ServerName, which
// grpc-go also takes as the call's :authority): sent as SNI, checked against the server's certificate and sent
// as :authority. The target, on 127.0.0.1, answers grpc.health.v1.Health/Check SERVING over TLS with a
// certificate for health.other.test only, which the started agent trusts (NODE_EXTRA_CA_CERTS); it records
// the SNI and :authority of each call.
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { firstResult } from '../support/checks.ts';

const fixtures = new URL('../probes/fixtures/', import.meta.url);
const certPath = new URL('other-host-cert.pem', fixtures).pathname;
const seen: Array<{ sni: string | false | null | undefined; authority: string | undefined }> = [];
let server: http2.Http2SecureServer;
let target = '';
let agent: Agent;

beforeAll(async () => {
  server = http2.createSecureServer({ cert: readFileSync(certPath), key: readFileSync(new URL('other-host-key.pem', fixtures)) });
  server.on('stream', (stream, headers) => {
    seen.push({ sni: (stream.session?.socket as TLSSocket | undefined)?.servername, authority: headers[':authority'] });
    stream.on('data', () => {});
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    // One uncompressed message: HealthCheckResponse { status: SERVING (1) }.
    stream.end(Buffer.from([0, 0, 0, 0, 2, 0x08, 0x01]));
  });
  server.on('sessionError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target = `127.0.0.1:${(server.address() as AddressInfo).port}/web`;
  agent = await startAgent({ env: { NODE_EXTRA_CA_CERTS: certPath } });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  server?.close();
});

type Check = { Status: string; Output: string };

/** Registers a TLS gRPC check on the target and waits until it has an output. */
async function probe(id: string, extra: Record<string, unknown>): Promise<Check> {
  return firstResult(agent.url, id, { GRPC: target, GRPCUseTLS: true, ...extra });
}

const handshakeFailed = 'rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509:';

test('with TLSServerName the certificate is checked against that name, which goes as SNI and :authority', async () => {
  const check = await probe('named', { TLSServerName: 'health.other.test' });
  expect(check).toMatchObject({ Status: 'passing', Output: `gRPC check ${target}: success` });
  expect(seen.at(-1)).toEqual({ sni: 'health.other.test', authority: 'health.other.test' });
}, 20_000);

test('without it the certificate is checked against the target\'s address, which it does not hold', async () => {
  const calls = seen.length;
  const check = await probe('unnamed', {});
  expect(check.Status).toBe('critical');
  expect(check.Output.startsWith(handshakeFailed)).toBe(true);
  expect(seen.length).toBe(calls);
}, 20_000);

test('a TLSServerName the certificate does not hold fails the handshake, naming both', async () => {
  const check = await probe('misnamed', { TLSServerName: 'wrong.other.test' });
  expect(check).toMatchObject({ Status: 'critical', Output: `${handshakeFailed} certificate is valid for health.other.test, not wrong.other.test"` });
}, 20_000);
