// Goal: one connection to the gRPC port cannot grow the agent's memory without bound. A started agent
// tells every connection it takes at most 100 streams at once (HTTP/2 SETTINGS; grpc-js says nothing by
// default, and a client then opens as many as it likes) — here Check calls that send their headers and
// never their request — while other clients are served; and that a request message is at most 4 KiB,
// refused as soon as its declared length is read (grpc-js keeps a message until it is whole).
import { connect } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & { check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void };

let agent: Agent;
beforeAll(async () => { agent = await startAgent(); });
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

test('at most 100 streams a connection, said in SETTINGS: of 1,000 calls opened at once, 100 stay open', async () => {
  // The client assumes no limit until the agent's SETTINGS arrive, so it sends every stream: the agent refuses those past 100.
  const session = connect(`http://${agent.grpc}`, { peerMaxConcurrentStreams: 100_000 });
  session.on('error', () => {});
  const settings = new Promise<number | undefined>((resolve) => session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)));
  let open = 0;
  // Check calls that send their headers and never their request: each would hold its stream for good.
  for (let i = 0; i < 1_000; i++) {
    const stream = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
    open += 1;
    stream.on('error', () => {});
    stream.on('close', () => { open -= 1; });
  }
  expect(await settings).toBe(100);
  await expect.poll(() => open, { timeout: 10_000 }).toBe(100);
  session.destroy();
  // Others are served meanwhile and after.
  const h = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
  const status = await new Promise<string>((resolve, reject) => h.check({ service: '' }, (err, res) => (err ? reject(err) : resolve(res!.status))));
  h.close();
  expect(status).toBe('SERVING');
  expect((await client(agent).get('/v1/status/leader')).status).toBe(200);
}, 30_000);

test('a request message past 4 KiB is refused RESOURCE_EXHAUSTED as soon as its length is read, its bytes not kept', async () => {
  const session = connect(`http://${agent.grpc}`);
  session.on('error', () => {});
  const ended: Promise<string | undefined>[] = [];
  for (let i = 0; i < 20; i++) {
    const stream = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
    stream.on('error', () => {});
    // The answer ends the agent's side (trailers, or a trailers-only response) while ours stays open.
    ended.push(new Promise((resolve) => {
      stream.on('trailers', (t) => resolve(String(t['grpc-status'])));
      stream.on('response', (h) => { if (h['grpc-status'] !== undefined) resolve(String(h['grpc-status'])); });
      stream.on('close', () => resolve(undefined));
      stream.resume();
    }));
    // A message declared at almost 4 MiB, of which 64 KiB is sent and the rest never.
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(4_194_300, 1);
    stream.write(Buffer.concat([prefix, Buffer.alloc(65_536, 0x41)]));
  }
  const statuses = await Promise.all(ended);
  session.destroy();
  expect(statuses).toEqual(Array.from({ length: 20 }, () => String(grpc.status.RESOURCE_EXHAUSTED)));
  // A long name within the bound is still refused by name.
  const h = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as HealthClient;
  const err = await new Promise<grpc.ServiceError | null>((resolve) => h.check({ service: 'x'.repeat(1_000) }, (e) => resolve(e)));
  h.close();
  expect([err?.code, err?.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'service name longer than 200 bytes']);
}, 30_000);
