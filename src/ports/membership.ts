/**
 * Who is in the cluster. A single node is alone (StaticMembership); a cluster learns its members from
 * gossip heartbeats (cluster/gossip-membership.ts). The runtime uses it to decide which live member
 * owns each timer (`owners`), and to notice failed nodes (`alive`, `members`).
 *
 * A member can be alive and still unable to use the log (cut off from every nats-server while its gossip
 * works): each node tells its membership whether its own log answers (`setLogReachable`), gossip carries
 * that to the others, and timers are owned only by members that can use the log, so another node takes
 * over what such a member owned. Being cut from the log is not a failure: `alive` and the failure
 * detector that reads it do not change.
 */
import { intervalMs } from './clock.ts';

export type MemberStatus = 'alive' | 'failed' | 'left';

export interface Member {
  /** Node name (unique in the cluster). */
  name: string;
  /** Node id (stable across restarts). */
  id: string;
  /** host:port of the node's HTTP API. */
  http: string;
  /** host:port of the node's gRPC health service. */
  grpc: string;
  status: MemberStatus;
  /** The interval clock's ms (intervalMs in clock.ts) of the last heartbeat heard (the own node: now); an age, never shown. */
  lastHeardMs: number;
  /**
   * The command level of the member's release (src/domain/command-level.ts), as its heartbeat says;
   * absent for a release whose heartbeat does not carry it, which is level 1.
   */
  commandLevel?: number;
  /** True while the member says it cannot use the log (its own node: as told by setLogReachable); absent: it can. */
  logUnreachable?: boolean;
}

/**
 * The members that may own timers: the alive ones that can use the log, sorted. When none can (every
 * node lost the log at once: nobody can commit), every alive member, so nothing moves until one can.
 */
export function ownersAmong(members: readonly Member[]): string[] {
  const alive = members.filter((m) => m.status === 'alive');
  const reaching = alive.filter((m) => m.logUnreachable !== true);
  return (reaching.length > 0 ? reaching : alive).map((m) => m.name).sort();
}

export type MembershipListener = (members: readonly Member[]) => void;

export interface Membership {
  start(): Promise<void>;
  /** Every member ever heard of this run, own node included, with its current status. */
  members(): Member[];
  /** Names of the members currently alive, own node included, sorted. */
  alive(): string[];
  /** Names of the members that may own timers, sorted: see ownersAmong. */
  owners(): string[];
  /**
   * Whether this node's own log answers. A change is told to this membership's listeners and, in a
   * cluster, to the other members, which stop (or start again) counting this node among the owners.
   */
  setLogReachable(reachable: boolean): void;
  /** Called after any status change (join, fail, leave, return). */
  onChange(listener: MembershipListener): () => void;
  /** Leaves the cluster (tells the others when it can) and stops. */
  stop(): Promise<void>;
  /** Moves a failed member to left (`prune`: forgets it), here and at the members it can tell; nothing for a live one. */
  forceLeave?(name: string, prune: boolean): void;
}

/** The membership of a single node: itself, always alive. */
export class StaticMembership implements Membership {
  constructor(private readonly self: Omit<Member, 'status' | 'lastHeardMs'>) {}

  async start(): Promise<void> {}

  members(): Member[] {
    return [{ ...this.self, status: 'alive', lastHeardMs: intervalMs() }];
  }

  alive(): string[] {
    return [this.self.name];
  }

  /** The node alone owns everything: when its log does not answer, nobody else could commit either. */
  owners(): string[] {
    return [this.self.name];
  }

  setLogReachable(): void {}

  onChange(): () => void {
    return () => {};
  }

  async stop(): Promise<void> {}
}

/**
 * A membership that can be put in place after the runtime started: a cluster node learns the ports it
 * listens on only after its servers are up, and gossip announces them. Until then it is the node alone.
 */
export class MembershipSlot implements Membership {
  private inner: Membership;
  private readonly listeners = new Set<MembershipListener>();
  private detach: () => void = () => {};
  private logReachable = true;

  constructor(initial: Membership) {
    this.inner = initial;
  }

  /** Switches to `next` (already started; told whether the log answers) and tells the listeners. */
  set(next: Membership): void {
    this.detach();
    this.inner = next;
    if (!this.logReachable) next.setLogReachable(false);
    this.detach = next.onChange((members) => this.emit(members));
    this.emit(next.members());
  }

  async start(): Promise<void> {
    await this.inner.start();
  }

  members(): Member[] {
    return this.inner.members();
  }

  alive(): string[] {
    return this.inner.alive();
  }

  owners(): string[] {
    return this.inner.owners();
  }

  setLogReachable(reachable: boolean): void {
    this.logReachable = reachable;
    this.inner.setLogReachable(reachable);
  }

  onChange(listener: MembershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    this.detach();
    await this.inner.stop();
  }

  forceLeave(name: string, prune: boolean): void {
    this.inner.forceLeave?.(name, prune);
  }

  private emit(members: readonly Member[]): void {
    for (const l of [...this.listeners]) l(members);
  }
}
