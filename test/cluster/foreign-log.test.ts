// Goal: a cluster node's data dir records the log it joined, and a start that finds another one stops. A
// node restarted with --nats naming other nats-servers (a standalone one, another cluster's) found no
// stream there and created a new, empty one, or used another cluster's, and served it: "not found" for
// keys its cluster holds, and locks its cluster's clients hold granted again. Now such a start exits 2
// with one message naming both logs, what probably happened and what to do, and creates nothing on those
// servers; the right servers start it as before; a fresh data dir against the other servers makes a new
// node of their log; a marker of an earlier release, which records no log, takes the log found. A server
// that answers "not found" for a moment (it does not know the stream yet) does not get a node refused.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { freePort, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { openStream, streamConfig } from '../../cluster/jetstream/setup.ts';
import { isLogForeign, silentLogger } from '../../src/ports/index.ts';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { withJsm } from '../support/jetstream.ts';

let natsA: NatsCluster;
let natsB: NatsCluster;
const dirs: string[] = [];
const running: Agent[] = [];

beforeAll(async () => {
  [natsA, natsB] = await Promise.all([startNatsServer(), startNatsServer()]);
}, 120_000);
afterAll(async () => {
  for (const a of running) await a.stop().catch(() => undefined);
  await Promise.all([natsA?.shutdown(), natsB?.shutdown()]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A node `name` on `dataDir` against `nats` (one server: one replica); rejects with the output when it stops before ready. */
async function startOn(nats: NatsCluster, dataDir: string, name: string): Promise<Agent> {
  const agent = await startAgent({
    bare: true, dataDir, readyTimeoutMs: 60_000,
    args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name, '--nats', nats.urls.join(','),
      '--replicas', '1', '--gossip-listen', `127.0.0.1:${await freePort()}`],
  });
  running.push(agent);
  return agent;
}

const refusalOf = (p: Promise<Agent>): Promise<string> => p.then(async (a) => { await a.stop(); return 'started'; }, (err: Error) => err.message);
const streamsOn = (nats: NatsCluster): Promise<string[]> => withJsm(nats.urls, async (jsm) => (await jsm.streams.names().next()).sort());
const markerOf = (dataDir: string): string => readFileSync(join(dataDir, 'cluster'), 'utf8');

test('a node restarted against another log, or none, stops naming both; the right servers start it; a fresh dir joins the other', async () => {
  const dirA = tempDataDir();
  dirs.push(dirA);
  const n1 = await startOn(natsA, dirA, 'n1');
  expect((await call(n1.url, 'PUT', '/v1/kv/app/config', 'important')).status).toBe(200);
  expect(await n1.stop()).toBe(0);
  const logA = /^log: (ROSTER_LOG@\S+)$/m.exec(markerOf(dirA))?.[1];
  expect(logA).toBeDefined();

  // Against a nats-server holding no log: refused, and nothing is created there.
  const onEmpty = await refusalOf(startOn(natsB, dirA, 'n1'));
  expect(onEmpty).toMatch(/exited \(2\) before ready/);
  expect(onEmpty).toContain(`roster: --data-dir ${dirA}: this node joined the log ${logA} (recorded in ${join(dirA, 'cluster')}), `
    + `but the nats-servers ${natsB.urls.join(',')} have no stream ROSTER_LOG: --nats probably names other nats-servers than the cluster's`);
  expect(onEmpty).toContain(`Point --nats at this cluster's nats-servers; to start a new, empty log on these servers on purpose, remove ${join(dirA, 'cluster')}`);
  expect(await streamsOn(natsB)).toEqual([]);

  // A fresh data dir against those servers is a new node of their log.
  const dirB = tempDataDir();
  dirs.push(dirB);
  const n2 = await startOn(natsB, dirB, 'n2');
  expect((await call(n2.url, 'GET', '/v1/kv/app/config')).status).toBe(404);
  expect((await call(n2.url, 'PUT', '/v1/kv/other/key', 'b')).status).toBe(200);
  const logB = /^log: (ROSTER_LOG@\S+)$/m.exec(markerOf(dirB))?.[1];
  expect(logB).toBeDefined();
  expect(logB).not.toBe(logA);

  // Against another cluster's log: refused, naming both logs.
  const onOther = await refusalOf(startOn(natsB, dirA, 'n1'));
  expect(onOther).toMatch(/exited \(2\) before ready/);
  expect(onOther).toContain(`roster: --data-dir ${dirA}: this node joined the log ${logA} (recorded in ${join(dirA, 'cluster')}), `
    + `but the nats-servers ${natsB.urls.join(',')} hold another log of that name, ${logB}: --nats probably names another cluster's servers`);
  expect(onOther).toContain(`to make this node a member of the other log on purpose, remove ${join(dirA, 'cluster')}`);
  expect(await n2.stop()).toBe(0);

  // The right servers: it starts and serves its cluster's registry.
  const again = await startOn(natsA, dirA, 'n1');
  expect((await call(again.url, 'GET', '/v1/kv/app/config?raw')).text).toBe('important');
  expect(await again.stop()).toBe(0);
  expect(markerOf(dirA)).toContain(`log: ${logA}\n`);
}, 180_000);

test('a marker of an earlier release, which records no log, takes the log found and records it', async () => {
  const dir = tempDataDir();
  dirs.push(dir);
  writeFileSync(join(dir, 'cluster'), 'This data dir belongs to a Roster cluster node: start it with --nats (see docs/cluster.md).\n');
  const node = await startOn(natsA, dir, 'n3');
  expect((await call(node.url, 'GET', '/v1/kv/app/config?raw')).text).toBe('important');
  expect(node.output()).toContain('the data dir recorded no log (an earlier release marked it): it now records the log found');
  expect(await node.stop()).toBe(0);
  expect(markerOf(dir)).toMatch(/^log: ROSTER_LOG@\S+$/m);
  expect(await refusalOf(startOn(natsB, dir, 'n3'))).toMatch(/exited \(2\) before ready[\s\S]*hold another log of that name/);
}, 120_000);

test('a node that joined a log asks again for a stream its server does not know yet, and never creates one', async () => {
  const notFound = () => new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: 'stream not found' });
  const created = new Date(Date.now() - 60_000).toISOString();
  const stream = 'JOINED';
  const plan = { stream, subject: `roster.log.${stream}`, replicas: 1, publishRetryMsMax: 1000, publishTimeoutMs: 2000, logger: silentLogger, joined: `${stream}@${created}` };
  const info = { created, config: { ...streamConfig(plan), subjects: [plan.subject] }, state: {} } as unknown as StreamInfo;
  let answers: Array<StreamInfo | Error> = [notFound(), notFound(), notFound(), info];
  let adds = 0;
  const jsm = {
    streams: {
      info: async () => { const next = answers.length > 1 ? answers.shift()! : answers[0]!; if (next instanceof Error) throw next; return next; },
      add: async () => { adds++; return info; },
    },
  } as unknown as JetStreamManager;
  expect((await openStream(jsm, plan, performance.now() + 20_000, 10_000)).info.created).toBe(created);

  answers = [notFound()];
  const refused: unknown = await openStream(jsm, plan, performance.now() + 20_000, 10_000).catch((err: unknown) => err);
  expect(isLogForeign(refused) && refused.joined === plan.joined && refused.found === undefined).toBe(true);
  expect(adds).toBe(0);
}, 30_000);
