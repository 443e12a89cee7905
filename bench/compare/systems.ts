/**
 * How bench:compare starts each lock system it knows and drives it: the processes it runs, the driver
 * that talks to them, the line that describes them, and the pids whose CPU its rows count.
 */
import { tmpdir } from 'node:os';
import { startNatsCluster, startNatsServer } from '../../cluster/dev/nats-launcher.ts';
import { EtcdDriver, startEtcd } from '../peers/etcd.ts';
import { NatsKvDriver } from '../peers/nats-kv.ts';
import { startFloor, startFloorCluster } from '../peers/floor.ts';
import { startRosterCluster } from '../peers/roster-cluster.ts';
import { RosterDriver } from '../peers/roster.ts';
import { fsTypeOf, stoppedNatsServer } from '../peers/tools.ts';
import type { LockDriver } from '../peers/driver.ts';
import { startRoster, type Server } from '../server.ts';
import type { LockSystem, Options } from './model.ts';

export interface Started {
  driver: LockDriver;
  description: string;
  failure: () => string | undefined;
  /** The server processes whose CPU the rows count: every process the system runs on, none of the bench's. */
  serverPids: number[];
  /** For a system of more than one kind of process: which of serverPids are which, told apart in the rows. */
  roles?: Record<string, number[]>;
}

/** A system to start: `start` runs its processes, `stop` ends them, `driven` connects a driver to them. */
export interface SystemPlan<T> {
  what: string;
  start(): Promise<T>;
  stop(t: T): Promise<void>;
  driven(t: T): Started | Promise<Started>;
}

/** SIGTERM must stop Roster cleanly (snapshot, exit 0): when it does not, that is a failure of the run. */
export async function stopRoster(srv: Server): Promise<void> {
  const failure = await srv.stop();
  if (failure !== undefined) throw new Error(failure);
}

const plan = <T>(p: SystemPlan<T>): SystemPlan<unknown> => p as SystemPlan<unknown>;

export function planOf(system: LockSystem, o: Options): SystemPlan<unknown> {
  const maxClients = Math.max(...o.clients);
  switch (system) {
    case 'roster':
      return plan({ what: 'Roster', start: () => startRoster([], o.dataParent), stop: stopRoster, driven: (srv) => ({
        driver: new RosterDriver({ urls: [srv.url], connectionsPerNode: maxClients, contention: 'queue' }),
        description: `one node, embedded WAL (one fdatasync per group commit), data dir on ${fsTypeOf(srv.dataDir)}`,
        failure: () => (srv.exited() === undefined ? undefined : `Roster stopped (${srv.exited()}):\n${srv.tail().slice(-3000)}`),
        serverPids: [srv.pid],
      }) });
    case 'floor':
      return plan({ what: 'floor server', start: () => startFloor(o.dataParent), stop: (f) => f.stop(), driven: (f) => ({
        driver: new RosterDriver({ name: 'floor', urls: [f.url], connectionsPerNode: maxClients, contention: 'queue', batches: false }),
        description: `the floor: uWebSockets.js, a paused connection per write, group commit (one write + one fdatasync), two maps; file on ${fsTypeOf(f.dataDir)}`,
        failure: () => (f.child.exited() === undefined ? undefined : `floor server stopped (${f.child.exited()}):\n${f.child.output().slice(-3000)}`),
        serverPids: [f.child.proc.pid!],
      }) });
    case 'roster-cluster':
      return plan({ what: 'Roster cluster', start: () => startRosterCluster(o.dataParent), stop: (c) => c.stop(), driven: (c) => ({
        driver: new RosterDriver({ name: 'roster-cluster', urls: c.nodes.map((n) => n.url), connectionsPerNode: Math.ceil(maxClients / c.nodes.length), contention: 'queue' }),
        description: `three nodes over three nats-servers, JetStream log R3 (file store, no fsync per write), clients round-robin over the nodes`,
        failure: c.failure,
        serverPids: [...c.nodes.map((n) => n.pid), ...c.nats.servers.map((s) => s.pid)],
        roles: { nodes: c.nodes.map((n) => n.pid), 'nats-servers': c.nats.servers.map((s) => s.pid) },
      }) });
    case 'floor-cluster':
      return plan({ what: 'cluster floor', start: startFloorCluster, stop: (c) => c.stop(), driven: (c) => ({
        driver: new RosterDriver({
          name: 'floor-cluster', urls: c.nodes.map((n) => n.url), connectionsPerNode: Math.ceil(maxClients / c.nodes.length), contention: 'queue', batches: false,
        }),
        description: 'the cluster floor: three floor nodes over three nats-servers, group commit to a JetStream stream R3 as Roster\'s (commit queue, '
          + 'ack inbox, ordered consumer on every node), two maps; clients round-robin over the nodes',
        failure: c.failure,
        serverPids: [...c.nodes.map((n) => n.child.proc.pid!), ...c.nats.servers.map((s) => s.pid)],
        roles: { nodes: c.nodes.map((n) => n.child.proc.pid!), 'nats-servers': c.nats.servers.map((s) => s.pid) },
      }) });
    case 'etcd':
    case 'etcd-cluster': {
      const members = system === 'etcd' ? 1 : 3;
      return plan({ what: system, start: () => startEtcd(members, o.dataParent), stop: (c) => c.stop(), driven: (c) => ({
        driver: new EtcdDriver(system, c.clientUrls),
        description: `etcd ${members} member${members > 1 ? 's' : ''} (Debian etcd-server, WAL fsync per batch), data dir on ${fsTypeOf(c.dataDir)}, `
          + `etcd3 gRPC client, one channel per member${members > 1 ? ', clients round-robin over the members' : ''}`,
        failure: c.failure,
        serverPids: c.pids,
      }) });
    }
    case 'nats-kv':
    case 'nats-kv-r3': {
      const replicas = system === 'nats-kv' ? 1 : 3;
      return plan({ what: system, start: () => (replicas === 1 ? startNatsServer() : startNatsCluster()), stop: (c) => c.shutdown(), driven: async (c) => ({
        driver: await NatsKvDriver.open(system, c.urls, replicas),
        description: `NATS KV bucket R${replicas} (history 1, file store, no fsync per write) on ${c.urls.length} nats-server${c.urls.length > 1 ? 's' : ''}, `
          + `store under ${tmpdir()} (${fsTypeOf(tmpdir())}), one connection per server`,
        failure: () => stoppedNatsServer(c),
        serverPids: c.servers.map((s) => s.pid),
      }) });
    }
  }
}
