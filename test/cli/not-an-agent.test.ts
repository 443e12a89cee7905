// Goal: an address that is not a Roster agent's HTTP port fails with a reason a user can act on, not only
// Node's code: a service that does not speak HTTP (HPE_INVALID_CONSTANT) is said not to have answered as
// HTTP, and an https agent whose self-signed certificate Node does not trust (DEPTH_ZERO_SELF_SIGNED_CERT)
// comes with the way to trust it (NODE_EXTRA_CA_CERTS). Stand-ins on port 0 play both.
import { readFileSync } from 'node:fs';
import { createServer as createHttps } from 'node:https';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { roster } from './support.ts';

const fixtures = join(import.meta.dirname, '../probes/fixtures');
const servers: Server[] = [];
const sockets: Socket[] = [];
// A socket a failed handshake left open would hold close() for good: they are destroyed first.
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) await new Promise((r) => s.close(r));
});

async function listening(server: Server): Promise<string> {
  servers.push(server);
  server.on('connection', (socket: Socket) => sockets.push(socket));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe.concurrent('an address that is not the agent\'s HTTP port', () => {
  test('a service that does not answer as HTTP', async () => {
    const addr = await listening(createServer((s) => { s.on('error', () => {}); s.end('SSH-2.0-OpenSSH_9.2\r\n'); }));
    const r = await roster(['members', '--http-addr', addr]);
    expect(r).toMatchObject({ code: 1, stderr: `roster: cannot reach the agent at http://${addr}: it did not answer as HTTP (HPE_INVALID_CONSTANT): is it the agent's HTTP port, not its gRPC or gossip port or another service?\n` });
  });

  test('https with a self-signed certificate', async () => {
    const tls = { cert: readFileSync(join(fixtures, 'localhost-cert.pem')), key: readFileSync(join(fixtures, 'localhost-key.pem')) };
    const addr = await listening(createHttps(tls, (_req, res) => res.end('[]')));
    const r = await roster(['members', '--http-addr', `https://${addr}`], { env: { NODE_EXTRA_CA_CERTS: undefined } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^roster: cannot reach the agent at https:\/\/127\.0\.0\.1:\d+: its certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\): NODE_EXTRA_CA_CERTS=<the CA's PEM file> makes Node trust the CA that signed it\n$/);
  });
});
