/**
 * Who is in the cluster. A single node is alone (StaticMembership); a cluster learns its members from
 * gossip heartbeats (cluster/gossip-membership.ts). The runtime uses it to decide which live member
 * owns each timer, and to notice failed nodes.
 */
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
  /** Wall-clock ms of the last heartbeat heard (the own node: now). */
  lastHeardMs: number;
}

export type MembershipListener = (members: readonly Member[]) => void;

export interface Membership {
  start(): Promise<void>;
  /** Every member ever heard of this run, own node included, with its current status. */
  members(): Member[];
  /** Names of the members currently alive, own node included, sorted. */
  alive(): string[];
  /** Called after any status change (join, fail, leave, return). */
  onChange(listener: MembershipListener): () => void;
  /** Leaves the cluster (tells the others when it can) and stops. */
  stop(): Promise<void>;
}

/** The membership of a single node: itself, always alive. */
export class StaticMembership implements Membership {
  constructor(private readonly self: Omit<Member, 'status' | 'lastHeardMs'>) {}

  async start(): Promise<void> {}

  members(): Member[] {
    return [{ ...this.self, status: 'alive', lastHeardMs: Date.now() }];
  }

  alive(): string[] {
    return [this.self.name];
  }

  onChange(): () => void {
    return () => {};
  }

  async stop(): Promise<void> {}
}
