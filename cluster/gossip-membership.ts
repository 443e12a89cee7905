/**
 * Cluster membership over libp2p gossipsub (DESIGN §4). Every node publishes a heartbeat on
 * `roster/members/v1` each `heartbeatMs`; a member unheard for `suspicionMs` is failed, a heartbeat
 * brings it back, and a node that stops cleanly says so last (`left` at the others).
 *
 * Peers find each other without hand-copied peer ids: seeds are plain addresses (dialled without a
 * `/p2p/` part; the peer id is learnt in the Noise handshake), optionally more come from a `discover`
 * hook, and every heartbeat carries its sender's listen addresses so members dial each other directly
 * and re-dial a restarted one at the address it had.
 */
import './polyfill.ts'; // first: libp2p calls Promise.withResolvers, which Node 20 lacks
import { createLibp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { identify } from '@libp2p/identify';
import { gossipsub } from '@chainsafe/libp2p-gossipsub';
import { preSharedKey } from '@libp2p/pnet';
import type { Multiaddr } from '@multiformats/multiaddr';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  intervalMs, silentLogger, SystemClock, type Clock, type Logger, type Member, type Membership, type MembershipListener,
  type TimerHandle,
} from '../src/ports/index.ts';
import { commandLevel } from '../src/domain/index.ts';
import { membersTopic, encodeHeartbeat, decodeHeartbeat, sameCluster, type Heartbeat } from './heartbeat.ts';
import { MemberTable, type MemberIdentity } from './member-table.ts';
import { IdentityClash, type IdentityHolder, type SharedIdentity } from './identity-clash.ts';
import { seedAddr, withoutPeerId } from './addresses.ts';
import { SeedWatch } from './seed-watch.ts';

export interface GossipMembershipOptions {
  /** This node as the others will see it. */
  self: MemberIdentity;
  /** libp2p listen multiaddr, e.g. `/ip4/0.0.0.0/tcp/7946` (`tcp/0` picks a free port). */
  listen: string;
  /**
   * Other members to dial: `host:port` or multiaddrs, without peer ids (one given is ignored). The own
   * address may be listed too, so every node can be given the same list. A bad seed throws here.
   */
  seeds: string[];
  /** @default 1000 */
  heartbeatMs?: number;
  /** A member unheard for this long is failed. @default 5000 */
  suspicionMs?: number;
  /** How often seeds, discovered and announced addresses without a connection are dialled. @default 2000 */
  redialMs?: number;
  /**
   * Called with `addresses()` once listening (and again each redial round until it succeeds), so the
   * runtime can publish them where `discover` of other nodes reads, e.g. a NATS key-value bucket.
   */
  publish?: (addrs: string[]) => Promise<void>;
  /** More addresses to dial (same forms as `seeds`), asked each redial round. */
  discover?: () => Promise<string[]>;
  /**
   * The cluster this node belongs to (the identity of the log it shares), sent in every heartbeat.
   * A heartbeat from another cluster is dropped, so a seed list that reaches into another cluster does
   * not make its nodes members here (nor a failure there fail a same-named member here).
   */
  cluster?: string;
  /**
   * The gossip key (Consul's `encrypt`, 32 bytes). With it every connection is first protected with the
   * key (a libp2p private network, XSalsa20): a peer without the same key cannot connect, so it can
   * neither send heartbeats nor read them. Without it anyone who reaches the listen address can.
   */
  key?: Uint8Array;
  /**
   * Called once when another live node that started first (see startedFirst) heartbeats under this node's
   * name (the two would register the name in turn in the catalog for as long as both run), with its ID
   * under another name (one data dir copied to two machines: each would remove the other's node, with its
   * services and sessions), or with both (a cloned machine: two processes acting as one node). This node
   * must stop (the agent exits). Without it a clash is logged only.
   */
  identityTaken?: (shared: SharedIdentity, other: IdentityHolder) => void;
  /** @default SystemClock */
  clock?: Clock;
  logger?: Logger;
}

/** A dial that has not connected by then is abandoned until the next round. */
const dialTimeoutMs = 2_000;
/** At most this many dials are started per redial round. */
const dialsPerRoundMax = 32;
/** Failure sweeps run this many times per heartbeat, so a failure is noticed close to `suspicionMs`. */
const sweepsPerHeartbeat = 4;
/** Gossipsub's own mesh heartbeat never runs slower than this. */
const gossipHeartbeatMsMax = 1_000;

/**
 * How long `stop()` waits between publishing the leaving heartbeat and stopping libp2p. Without it the
 * message was lost in roughly one test run in five here; if it is still lost, the others see a failure.
 */
const leaveFlushMs = 100;

/** At most this many other clusters are warned about; heartbeats of further ones are dropped silently. */
const foreignClustersWarnedMax = 16;

type Node = Awaited<ReturnType<typeof createNode>>;

export class GossipMembership implements Membership {
  private readonly self: MemberIdentity;
  private readonly heartbeatMs: number;
  private readonly suspicionMs: number;
  private readonly redialMs: number;
  private readonly seeds: Multiaddr[];
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly table: MemberTable;
  private readonly listeners = new Set<MembershipListener>();
  private node: Node | undefined;
  private inc = 0;
  private seq = 0;
  private published = false;
  /** Another node heard under this node's name, or with its ID (identity-clash.ts). */
  private clashes: IdentityClash[] = [];
  /** Other clusters already warned about (bounded: a warning each, not one per heartbeat). */
  private readonly warnedClusters = new Set<string>();
  private stopped = false;
  private readonly timers: { heartbeat?: TimerHandle; sweep?: TimerHandle; redial?: TimerHandle } = {};
  /** Peer id last found at each dialled address (key: multiaddr string without peer id). */
  private readonly peerAt = new Map<string, string>();
  private readonly dialing = new Set<string>();
  /** Warns when the seeds are dialled and no other member is heard (seed-watch.ts). */
  private seedWatch: SeedWatch | undefined;

  constructor(private readonly opts: GossipMembershipOptions) {
    this.self = { ...opts.self };
    this.heartbeatMs = opts.heartbeatMs ?? 1_000;
    this.suspicionMs = opts.suspicionMs ?? 5_000;
    this.redialMs = opts.redialMs ?? 2_000;
    if (!(this.heartbeatMs > 0 && this.suspicionMs > this.heartbeatMs && this.redialMs > 0)) {
      throw new Error('membership: need 0 < heartbeatMs < suspicionMs and redialMs > 0');
    }
    this.seeds = opts.seeds.map(seedAddr);
    this.clock = opts.clock ?? new SystemClock();
    this.logger = opts.logger ?? silentLogger;
    this.table = new MemberTable(this.self);
  }

  async start(): Promise<void> {
    if (this.node !== undefined || this.stopped) throw new Error('membership: start() is called once');
    this.inc = this.clock.nowMs();
    this.seedWatch = new SeedWatch({ logger: this.logger, aloneWarnMs: 2 * this.suspicionMs }, intervalMs(this.clock));
    const self = { name: this.self.name, id: this.self.id, inc: this.inc, http: this.self.http };
    const taken = this.opts.identityTaken;
    this.clashes = (['name', 'id', 'both'] as const).map((shared) => new IdentityClash({
      self, shared, liveAfterMs: this.suspicionMs, logger: this.logger, taken: taken && ((other) => taken(shared, other)),
    }));
    const node = await createNode(this.opts.listen, this.heartbeatMs, this.opts.key);
    this.node = node;
    node.services.pubsub.addEventListener('message', (evt) => {
      const msg = evt.detail;
      if (msg.topic !== membersTopic) return;
      this.onMessage(msg.data, msg.type === 'signed' ? msg.from.toString() : undefined);
    });
    node.services.pubsub.subscribe(membersTopic);
    this.logger.info({ addrs: this.addresses(), peer: node.peerId.toString() }, 'membership listening');
    this.beat();
    this.scheduleSweep();
    void this.redial();
  }

  members(): Member[] {
    return this.table.members(intervalMs(this.clock));
  }

  alive(): string[] {
    return this.table.alive();
  }

  owners(): string[] {
    return this.table.owners();
  }

  /** Told to the others at once, in a heartbeat of its own, and in every heartbeat after it. */
  setLogReachable(reachable: boolean): void {
    if (this.table.selfLogUnreachable === !reachable) return;
    this.table.selfLogUnreachable = !reachable;
    if (!this.stopped) void this.publish(this.heartbeat());
    this.changed();
  }

  /** Force-leave here, and told to the others with the next heartbeat's worth of gossip. */
  forceLeave(name: string, prune: boolean): void {
    if (this.table.forceLeave(name, prune)) this.changed();
    void this.publish({ ...this.heartbeat(), forceLeave: { name, prune } });
  }

  onChange(listener: MembershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The libp2p addresses this node listens on, without peer id: usable as other nodes' seeds. */
  addresses(): string[] {
    return (this.node?.getMultiaddrs() ?? []).map((ma) => withoutPeerId(ma).toString());
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of Object.values(this.timers)) if (t !== undefined) this.clock.clearTimer(t);
    const node = this.node;
    if (node === undefined) return;
    await this.publish({ ...this.heartbeat(), leaving: true });
    // Gossipsub's stop drops what its stream buffers have not yet handed to the socket; give the
    // goodbye a moment on the wire. Real time, not the Clock: this waits for I/O, not for an event.
    await sleep(leaveFlushMs);
    await node.stop();
    this.logger.info({}, 'membership stopped');
  }

  private heartbeat(): Heartbeat {
    const hb: Heartbeat = { ...this.self, inc: this.inc, seq: this.seq++, addrs: this.addresses(), cl: commandLevel };
    if (this.opts.cluster !== undefined) hb.cluster = this.opts.cluster;
    if (this.table.selfLogUnreachable) hb.logUnreachable = true;
    return hb;
  }

  private beat(): void {
    if (this.stopped) return;
    void this.publish(this.heartbeat());
    this.timers.heartbeat = this.clock.setTimer(this.heartbeatMs, () => this.beat());
  }

  private async publish(hb: Heartbeat): Promise<void> {
    try {
      await this.node?.services.pubsub.publish(membersTopic, encodeHeartbeat(hb));
    } catch (err) {
      this.logger.debug({ err, seq: hb.seq }, 'heartbeat not published');
    }
  }

  private scheduleSweep(): void {
    if (this.stopped) return;
    if (this.table.sweep(intervalMs(this.clock), this.suspicionMs)) this.changed();
    const everyMs = Math.max(1, Math.floor(this.heartbeatMs / sweepsPerHeartbeat));
    this.timers.sweep = this.clock.setTimer(everyMs, () => this.scheduleSweep());
  }

  private onMessage(data: Uint8Array, fromPeer: string | undefined): void {
    if (this.stopped) return;
    const hb = decodeHeartbeat(data);
    if ('invalid' in hb) {
      this.logger.debug({ reason: hb.invalid, peer: fromPeer }, 'heartbeat dropped');
      return;
    }
    if (hb.cluster !== undefined && this.opts.cluster !== undefined && !sameCluster(hb.cluster, this.opts.cluster)) {
      this.foreign(hb, fromPeer);
      return;
    }
    for (const clash of this.clashes) clash.heard(hb, fromPeer, intervalMs(this.clock));
    if (fromPeer !== undefined) for (const a of hb.addrs ?? []) this.peerAt.set(a, fromPeer);
    const heard = this.table.heard(hb, intervalMs(this.clock));
    const forced = hb.forceLeave !== undefined && hb.forceLeave.name !== this.self.name && this.table.forceLeave(hb.forceLeave.name, hb.forceLeave.prune);
    if (heard || forced) this.changed();
  }

  /** A heartbeat of another cluster: dropped, with a warning the first time that cluster is heard. */
  private foreign(hb: Heartbeat, fromPeer: string | undefined): void {
    if (this.warnedClusters.has(hb.cluster!) || this.warnedClusters.size >= foreignClustersWarnedMax) return;
    this.warnedClusters.add(hb.cluster!);
    this.logger.warn({ name: hb.name, cluster: hb.cluster, ours: this.opts.cluster, peer: fromPeer },
      'membership: a node of another cluster is reachable through the seeds or their members; its heartbeats are dropped');
  }

  private changed(): void {
    const members = this.members();
    this.logger.info({ alive: this.alive(), owners: this.owners() }, 'membership changed');
    for (const listener of this.listeners) {
      try {
        listener(members);
      } catch (err) {
        this.logger.warn({ err }, 'membership listener threw');
      }
    }
  }

  /** One redial round, then the next one is scheduled: a restarted or late member is reached again. */
  private async redial(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.publishAddresses();
      const targets = await this.dialTargets();
      await Promise.all(targets.slice(0, dialsPerRoundMax).map((ma) => this.dial(ma)));
      const own = new Set(this.addresses());
      const seeds = this.seeds.map(String).filter((k) => !own.has(k) && this.peerAt.get(k) !== this.node?.peerId.toString());
      this.seedWatch?.round(intervalMs(this.clock), this.table.alive().length > 1, seeds);
    } catch (err) {
      this.logger.warn({ err }, 'membership: redial round failed');
    } finally {
      if (!this.stopped) this.timers.redial = this.clock.setTimer(this.redialMs, () => void this.redial());
    }
  }

  private async publishAddresses(): Promise<void> {
    if (this.published || this.opts.publish === undefined) return;
    try {
      await this.opts.publish(this.addresses());
      this.published = true;
    } catch (err) {
      this.logger.warn({ err }, 'membership: publishing the own addresses failed; retrying next round');
    }
  }

  /** Seeds, discovered and announced addresses that are not ours and have no open connection. */
  private async dialTargets(): Promise<Multiaddr[]> {
    const candidates = [...this.seeds, ...(await this.discovered())];
    for (const a of this.table.dialableAddrs()) {
      try {
        candidates.push(seedAddr(a));
      } catch {
        // an announced address we cannot read: the member is still reached through gossip
      }
    }
    const own = new Set(this.addresses());
    const byKey = new Map<string, Multiaddr>();
    for (const ma of candidates) {
      const key = ma.toString();
      if (own.has(key) || this.dialing.has(key) || this.connectedAt(key)) continue;
      byKey.set(key, ma);
    }
    return [...byKey.values()];
  }

  private async discovered(): Promise<Multiaddr[]> {
    if (this.opts.discover === undefined) return [];
    try {
      const out: Multiaddr[] = [];
      for (const s of await this.opts.discover()) {
        try {
          out.push(seedAddr(s));
        } catch (err) {
          this.logger.debug({ err, addr: s }, 'discovered address ignored');
        }
      }
      return out;
    } catch (err) {
      this.logger.warn({ err }, 'membership: discover failed');
      return [];
    }
  }

  private connectedAt(key: string): boolean {
    const peer = this.peerAt.get(key);
    if (peer === undefined || this.node === undefined) return false;
    if (peer === this.node.peerId.toString()) return true; // our own address under another name
    return this.node.getConnections().some((c) => c.remotePeer.toString() === peer && c.status === 'open');
  }

  private async dial(ma: Multiaddr): Promise<void> {
    const key = ma.toString();
    const node = this.node;
    if (node === undefined) return;
    this.dialing.add(key);
    try {
      const conn = await node.dial(ma, { signal: AbortSignal.timeout(dialTimeoutMs) });
      this.peerAt.set(key, conn.remotePeer.toString());
      this.seedWatch?.dialed(key);
      this.logger.debug({ addr: key, peer: conn.remotePeer.toString() }, 'membership dialled');
    } catch (err) {
      if ((err as Error).message === 'Can not dial self') this.peerAt.set(key, node.peerId.toString());
      else this.seedWatch?.dialed(key, err); // logged there at debug
    } finally {
      this.dialing.delete(key);
    }
  }
}

/** The key as libp2p's private network reads one: its swarm key file, the key in hex. */
function swarmKeyOf(key: Uint8Array): Uint8Array {
  return new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${Buffer.from(key).toString('hex')}`);
}
/**
 * A libp2p node for a handful of members: floodPublish sends each heartbeat to every subscribed peer
 * (not only the mesh), publishing alone is not an error, and the mesh degree is small so three nodes
 * already form a full mesh.
 */
async function createNode(listen: string, heartbeatMs: number, key: Uint8Array | undefined) {
  return createLibp2p({
    addresses: { listen: [listen] },
    ...(key === undefined ? {} : { connectionProtector: preSharedKey({ psk: swarmKeyOf(key) }) }),
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: {
      identify: identify(),
      pubsub: gossipsub({
        allowPublishToZeroTopicPeers: true,
        floodPublish: true,
        emitSelf: false,
        D: 3,
        Dlo: 2,
        Dhi: 6,
        Dout: 1,
        heartbeatInterval: Math.min(heartbeatMs, gossipHeartbeatMsMax),
      }),
    },
  });
}
