// Goal: nodes that start together and race to create the log's stream on a three-server JetStream cluster
// (R3) all take the same creation time, the one the stream keeps. That time is half of the log's identity:
// gossip compares it to tell members of another cluster apart, and each snapshot records it. nats-server
// 2.9.10 answers each of several identical creates racing a few milliseconds apart with success and that
// create's own time; a node that kept it was taken by the others for a node of another cluster. A server
// that does not know the stream yet (created through another server a moment before) is asked again.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { silentLogger } from '../../src/ports/index.ts';
import { openStream, settledStream, streamConfig, streamNameInUseCode, type AdoptedStream } from '../../cluster/jetstream/setup.ts';
import { startNatsCluster, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';

let nats: NatsCluster;
const conns: NatsConnection[] = [];
beforeAll(async () => {
  nats = await startNatsCluster();
  for (const url of nats.urls) conns.push(await connect({ servers: [url] }));
}, 120_000);
afterAll(async () => {
  for (const c of conns) await c.close();
  await nats?.shutdown();
});

it('three nodes racing to create an R3 stream, staggered by 0 to 30 ms, all take the time the stream keeps', async () => {
  const managers = await Promise.all(conns.map((c) => jetstreamManager(c, { timeout: 2_000 })));
  const rounds = 8;
  for (let round = 0; round < rounds; round++) {
    const stream = `RACE${process.pid}_${round}`;
    const plan = { stream, subject: `roster.log.${stream}`, replicas: 3, publishRetryMsMax: 1000, publishTimeoutMs: 2000, logger: silentLogger };
    const staggerMs = (k: number) => k * (round % 6) * 5;
    const adopted = await Promise.all(managers.map(async (m, k) => {
      await new Promise((r) => setTimeout(r, staggerMs(k)));
      return openStream(m, plan, performance.now() + 60_000, 6_000);
    }));
    const kept = await readSettled(managers[0]!, stream);
    expect(adopted.map((a) => a.info.created), `round ${round}`).toEqual([kept, kept, kept]);
    await managers[0]!.streams.delete(stream).catch(() => undefined);
  }
}, 240_000);

/** The creation time two reads a second apart agree on (the test's own reading of what the stream keeps). */
async function readSettled(m: Awaited<ReturnType<typeof jetstreamManager>>, stream: string): Promise<string> {
  for (let last = ''; ;) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = (await m.streams.info(stream)).created;
    if (now === last) return now;
    last = now;
  }
}

const infoAt = (created: string, name = 'LOG') => ({ created, config: { name }, state: {} }) as unknown as StreamInfo;
const adoptedAt = (created: string): AdoptedStream => ({ info: infoAt(created), subject: 's', strictSeq: true, differs: {} });

it('a young stream is read again until two reads agree; an old one is taken as found', async () => {
  const young = new Date(Date.now() - 1_000).toISOString();
  const first = new Date(Date.now() - 1_010).toISOString();
  const reads = [first, first];
  let asked = 0;
  const settled = await settledStream(adoptedAt(young), performance.now() + 10_000, () => { asked++; return Promise.resolve(infoAt(reads.shift()!)); });
  expect(settled.info.created).toBe(first);
  expect(asked).toBe(2);

  const old = new Date(Date.now() - 60_000).toISOString();
  asked = 0;
  const found = await settledStream(adoptedAt(old), performance.now() + 10_000, () => { asked++; return Promise.resolve(infoAt(first)); });
  expect(found.info.created).toBe(old);
  expect(asked).toBe(0);
});

it('a creation time not known yet (Go\'s zero time) is read again until a known time settles; zero twice does not settle', async () => {
  const zero = '0001-01-01T00:00:00Z';
  const created = new Date(Date.now() - 2_000).toISOString();
  const reads = [zero, zero, created, created];
  let asked = 0;
  const settled = await settledStream(adoptedAt(zero), performance.now() + 10_000, () => { asked++; return Promise.resolve(infoAt(reads.shift()!)); });
  expect(settled.info.created).toBe(created);
  expect(asked).toBe(4);
  await expect(settledStream(adoptedAt(zero), performance.now() + 1_200, () => Promise.resolve(infoAt(zero)))).rejects.toThrow(/did not settle/);
});

it('a creation time that keeps changing fails the open at its deadline', async () => {
  let n = 0;
  const changing = () => Promise.resolve(infoAt(new Date(Date.now() - 1_000 + n++).toISOString()));
  await expect(settledStream(adoptedAt(new Date().toISOString()), performance.now() + 1_200, changing)).rejects.toThrow(/did not settle/);
});


it('a stream another node just created, not known yet to the server this node asks, is asked for again', async () => {
  const notFound = () => new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: 'stream not found' });
  const created = new Date(Date.now() - 60_000).toISOString();
  const stream = 'LAGGING';
  const plan = { stream, subject: `roster.log.${stream}`, replicas: 3, publishRetryMsMax: 1000, publishTimeoutMs: 2000, logger: silentLogger };
  const info = { created, config: { ...streamConfig(plan), subjects: [plan.subject] }, state: {} } as unknown as StreamInfo;
  // This node's server: no stream at first; the add is refused as another node's create went first; then
  // twice "not found" (the create has not reached it yet), then the stream.
  const infos: Array<StreamInfo | Error> = [notFound(), notFound(), notFound(), info, info];
  let adds = 0;
  const jsm = {
    streams: {
      info: async () => { const next = infos.shift() ?? info; if (next instanceof Error) throw next; return next; },
      add: async () => { adds++; throw new JetStreamApiError({ code: 400, err_code: streamNameInUseCode, description: 'stream name already in use' }); },
    },
  } as unknown as JetStreamManager;
  const adopted = await openStream(jsm, plan, performance.now() + 20_000, 2_000);
  expect(adopted.info.created).toBe(created);
  expect(adds).toBeGreaterThanOrEqual(1);
});
