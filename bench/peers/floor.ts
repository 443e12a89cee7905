/**
 * The floor servers of bench:compare (bench/floor-server.ts): the single-node floor, started as its own
 * process with a fresh data dir for its log file, which is removed when it stops; and the cluster floor,
 * three floor nodes over three nats-servers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startNatsCluster, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { startScriptServer, type HelloServer } from './reads.ts';
import { stoppedNatsServer } from './tools.ts';

export interface FloorServer extends HelloServer {
  dataDir: string;
  stop(): Promise<void>;
}

export async function startFloor(dataParent: string): Promise<FloorServer> {
  const dataDir = mkdtempSync(join(dataParent, 'roster-floor-'));
  try {
    const s = await startScriptServer('floor', 'bench/floor-server.ts', [dataDir]);
    return {
      ...s, dataDir,
      stop: async () => {
        await s.child.stop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

/** The cluster floor: three nats-servers with JetStream and routes, and a floor node on each (`--nats`, as Roster's nodes get every server). */
export interface FloorCluster {
  nodes: HelloServer[];
  nats: NatsCluster;
  /** A node or server that stopped, with its output's tail, or undefined. */
  failure(): string | undefined;
  stop(): Promise<void>;
}

export async function startFloorCluster(): Promise<FloorCluster> {
  const nats = await startNatsCluster();
  const nodes: HelloServer[] = [];
  const cluster: FloorCluster = {
    nodes, nats,
    failure: () => {
      const gone = nodes.find((n) => n.child.exited() !== undefined);
      if (gone !== undefined) return `floor node stopped (${gone.child.exited()}):\n${gone.child.output().slice(-3000)}`;
      return stoppedNatsServer(nats);
    },
    stop: async () => {
      await Promise.all(nodes.map((n) => n.child.stop()));
      await nats.shutdown();
    },
  };
  try {
    const started = await Promise.allSettled(['n1', 'n2', 'n3'].map((name) =>
      startScriptServer('floor', 'bench/floor-server.ts', ['--nats', nats.urls.join(','), '--node', name])));
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  } catch (err) {
    await cluster.stop().catch(() => {});
    throw err;
  }
  return cluster;
}
