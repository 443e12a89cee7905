// The nats-server clusters the tests start (cluster/dev/nats-launcher.ts) stay apart. Ports are chosen
// free and bound later, so one test's server can be handed a peer port that another test's cluster took
// in between; its routes then dial that other cluster. Each cluster has its own name, and nats-server
// refuses a route from another cluster's name, so the stray server never joins it. A started cluster is
// ready only once it places a stream on all its servers (its meta leader has heard from every peer).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, test } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { freePort, natsConfigText, natsServerBinary, placesReplicas, startNatsCluster } from '../../cluster/dev/nats-launcher.ts';

interface Varz { cluster: { name: string; cluster_port: number } }

const varzOf = async (monitorUrl: string): Promise<Varz> => (await fetch(`${monitorUrl}/varz`)).json() as Promise<Varz>;
const routesOf = async (monitorUrl: string): Promise<number> => ((await (await fetch(`${monitorUrl}/routez`)).json()) as { num_routes: number }).num_routes;

test('a server of one local cluster whose peer port was taken by another cluster is refused by it', async () => {
  const a = await startNatsCluster();
  const b = await startNatsCluster();
  const dir = mkdtempSync(join(tmpdir(), 'roster-stray-'));
  let stray: ReturnType<typeof spawn> | undefined;
  try {
    const [aN2, bN1] = [await varzOf(a.byName('n2').monitorUrl), await varzOf(b.byName('n1').monitorUrl)];
    expect(aN2.cluster.name).not.toBe(bN1.cluster.name);
    // A server of b's cluster, n1 by name as in every local cluster, whose peer port is a's n2's route port.
    const monitor = await freePort();
    const conf = join(dir, 'stray.conf');
    writeFileSync(conf, natsConfigText({
      name: 'n1', client: await freePort(), monitor, storeDir: join(dir, 'js'),
      cluster: { name: bN1.cluster.name, port: await freePort(), routes: [aN2.cluster.cluster_port] },
    }));
    let out = '';
    stray = spawn(natsServerBinary(), ['-c', conf, '-js'], { stdio: ['ignore', 'pipe', 'pipe'] });
    stray.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    // It dials a's n2 over and over; give it time for several tries once it is up.
    const deadline = Date.now() + 10_000;
    while (!/Listening for route connections/.test(out) && Date.now() < deadline) await sleep(50);
    expect(out).toMatch(/Listening for route connections/);
    await sleep(2_000);
    expect(await routesOf(a.byName('n2').monitorUrl)).toBe(2);
    expect(await routesOf(`http://127.0.0.1:${monitor}`)).toBe(0);
  } finally {
    if (stray?.exitCode === null) {
      const gone = new Promise((res) => stray!.once('exit', res));
      stray.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
    await a.shutdown();
    await b.shutdown();
  }
}, 60_000);

test('a started cluster places a stream on its three servers at once; a stream of more replicas than servers is not placed, and no probe is left', async () => {
  const c = await startNatsCluster();
  const nc = await connect({ servers: c.urls });
  try {
    const jsm = await jetstreamManager(nc);
    expect(await placesReplicas(jsm, 3)).toBe(true);
    expect(await placesReplicas(jsm, 4)).toBe(false);
    expect((await jsm.streams.names().next()).filter((n) => n.startsWith('PLACEMENT_PROBE_'))).toEqual([]);
  } finally {
    await nc.close();
    await c.shutdown();
  }
}, 60_000);
