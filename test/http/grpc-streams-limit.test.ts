// Goal: one connection to the gRPC port cannot grow the agent's memory without bound. A started agent
// tells every connection it takes at most 100 streams at once (HTTP/2 SETTINGS; grpc-js says nothing by
// default, and a client then opens as many as it likes) — here Check calls that send their headers and
// never their request — while other clients are served.
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
