/**
 * The owner actor of node health: a member that failed or left gets its gossip check critical
 * (invalidating the sessions bound to it); one that is back gets it passing. One alive member — the
 * owner of the node's name — proposes it; the proposal changes nothing when the check already says so.
 *
 * Failures are reported only by a node that sees a majority of the cluster's Roster nodes alive (itself
 * included; nodes that left cleanly do not count). A node cut off from the others, or just woken from a
 * pause with a stale view, sees them all failed: its reports would commit once it is reconnected and
 * invalidate the sessions of healthy nodes.
 *
 * And only once the failure has held for `failureConfirmMs` in such a view: gossip notices each peer on
 * its own timer, so a node being cut off first sees one peer failed and the rest alive (a majority) for
 * a moment, and a node being reconnected first sees one peer back; a report made then would be wrong.
 *
 * After an entry changed a gossip check (`afterEntries`) it only corrects towards alive: a report that
 * got through anyway is undone by the owner, which sees the node alive, or by the node itself, which is
 * evidently running (only a report of the failure detector's, recognised by its output). New failure
 * reports come only from membership changes and restores, so two nodes whose views disagree (an
 * asymmetric partition) cannot keep proposing against each other. A restore is judged as a membership
 * change: it may bring Roster nodes of another cluster, which no member will ever be.
 *
 * A single agent (`alone`) is the whole cluster: no other node can become a member, so every other Roster
 * node of its catalog (one a restore brought) is failed, judged at once, with no grace to wait for gossip
 * and no majority to see (the agent is all of it). Nodes registered through the catalog without a gossip
 * check (external nodes) are never judged, here or in a cluster.
 */
import type { Command } from '../domain/commands.ts';
import { gossipCheckId, gossipCheckName, gossipCheckOutputAlive, gossipCheckOutputFailed } from '../domain/limits.ts';
import type { CatalogNode } from '../domain/types.ts';
import type { Clock, TimerHandle } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { Member, Membership } from '../ports/membership.ts';
import type { RegistryState, Result } from '../state/index.ts';

/** What the owner needs from its node. */
export interface NodeHealthHost {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly nodeName: string;
  readonly membership: Membership;
  /** The state this node has applied so far. */
  state(): RegistryState;
  /** Whether this node owns the actor among the alive members. */
  owns(actor: string): boolean;
  propose(cmd: Command): Promise<Result>;
  /** False once the node stops or failed: nothing more is proposed. */
  running(): boolean;
}

export interface NodeHealthOptions {
  /** How long a starting node waits for gossip before judging members it has not heard. */
  graceMs: number;
  /** How long a member must stay failed, in a view where a majority is alive, before it is reported. */
  failureConfirmMs: number;
  /** The node is the whole cluster (a single agent): no other node is or will be a member. @default false */
  alone?: boolean;
}

/** One look at the cluster: the Roster nodes of the catalog against the membership. */
interface View {
  members: Map<string, Member>;
  rosterNodes: CatalogNode[];
  counted: number;
  aliveCount: number;
  inMajority: boolean;
  graceOver: boolean;
  now: number;
}

/** How often a wait for gossip looks again. */
const gossipWaitStepMs = 100;

export class NodeHealthOwner {
  private startedAtMs = 0;
  /** Set once the node listens to membership: from then on gossip-check entries are checked against it. */
  private watching = false;
  /** Nodes whose gossip check update this node has proposed and not yet seen applied. */
  private readonly inFlight = new Set<string>();
  /** Nodes this node has seen failed, in a majority view, since when (its clock). */
  private readonly failureSince = new Map<string, number>();
  private confirmTimer: TimerHandle | undefined;
  /** A restore was applied and its nodes not yet judged in a majority view (see restored). */
  private restoreUnjudged = false;

  constructor(private readonly host: NodeHealthHost, private readonly o: NodeHealthOptions) {}

  /** The grace for unheard members counts from here. */
  start(): void {
    this.startedAtMs = this.host.clock.nowMs();
  }

  /** From here on, entries that change a gossip check are looked at (`entriesChanged`). */
  watch(): void {
    this.watching = true;
  }

  stop(): void {
    if (this.confirmTimer !== undefined) this.host.clock.clearTimer(this.confirmTimer);
  }

  /** Resolves once gossip has heard of every Roster node of the catalog, the start's grace is over, or the node stops. */
  async heardOrGraceOver(): Promise<void> {
    for (;;) {
      const v = this.view();
      if (v.graceOver || !this.host.running() || v.rosterNodes.every((n) => n.node === this.host.nodeName || v.members.has(n.node))) return;
      await new Promise<void>((resolve) => this.host.clock.setTimer(gossipWaitStepMs, resolve));
    }
  }

  /** Membership changed (or the grace ended): report failures and returns. */
  membershipChanged(): void {
    this.reconcile(false);
  }

  /** An applied entry changed a gossip check: correct towards alive only, unless a restore is still to be judged. */
  entriesChanged(): void {
    if (!this.watching || !this.host.running()) return;
    if (this.restoreUnjudged) this.judgeRestore();
    else this.reconcile(true);
  }

  /**
   * A restore replaced the catalog: its Roster nodes are judged as after a membership change, once this
   * node's view holds a majority. Right after the restore it may not: the members register themselves
   * again only then (a snapshot of another cluster holds none of them), each with an entry that comes
   * back here through entriesChanged.
   */
  restored(): void {
    this.restoreUnjudged = true;
    if (this.watching && this.host.running()) this.judgeRestore();
  }

  private judgeRestore(): void {
    if (!this.view().inMajority) {
      this.reconcile(true);
      return;
    }
    this.restoreUnjudged = false;
    this.reconcile(false);
  }

  private reconcile(afterEntries: boolean): void {
    const view = this.view();
    for (const node of view.rosterNodes) this.reconcileNode(node, view, afterEntries);
  }

  private view(): View {
    const { host } = this;
    const state = host.state();
    const members = new Map(host.membership.members().map((m) => [m.name, m]));
    const alone = this.o.alone === true;
    const graceOver = alone || host.clock.nowMs() - this.startedAtMs >= this.o.graceMs;
    const rosterNodes = [...state.nodes.values()].filter((node) => {
      const check = state.checkOf(node.node, gossipCheckId);
      return check !== undefined && check.source === 'catalog' && check.name === gossipCheckName;
    });
    // Alone, the agent is every member there is; in a cluster a node not heard yet may be a member cut off.
    const counted = rosterNodes.filter((node) => node.node === host.nodeName || (!alone && members.get(node.node)?.status !== 'left'));
    const aliveCount = counted.filter((node) => node.node === host.nodeName || members.get(node.node)?.status === 'alive').length;
    return {
      members, rosterNodes, counted: counted.length, aliveCount, inMajority: alone || 2 * aliveCount > counted.length,
      graceOver, now: host.clock.nowMs(),
    };
  }

  private reconcileNode(node: CatalogNode, v: View, afterEntries: boolean): void {
    const self = node.node === this.host.nodeName;
    const member = v.members.get(node.node);
    const alive = self || member?.status === 'alive';
    const reportable = !alive && v.inMajority && (member !== undefined || v.graceOver);
    if (!reportable) this.failureSince.delete(node.node);
    if (this.inFlight.has(node.node)) return;
    const check = this.host.state().checkOf(node.node, gossipCheckId)!;
    if (!alive && (afterEntries || !reportable)) return;
    const wanted = alive ? 'passing' : 'critical';
    if (check.status === wanted || (!self && !this.host.owns(`node:${node.node}`))) return;
    // A node undoes only the failure detector's reports about itself, not a status written by hand.
    if (self && check.output !== gossipCheckOutputFailed) return;
    if (!alive && !this.confirmed(node.node, v.now)) return;
    this.report(node, alive, v);
  }

  /** Whether the node's failure has held long enough; if not, a look is scheduled for when it will have. */
  private confirmed(name: string, now: number): boolean {
    const since = this.failureSince.get(name) ?? now;
    this.failureSince.set(name, since);
    if (now - since >= this.o.failureConfirmMs) return true;
    // One pending look at a time; it reschedules itself for any failure still unconfirmed then.
    this.confirmTimer ??= this.host.clock.setTimer(since + this.o.failureConfirmMs - now, () => {
      this.confirmTimer = undefined;
      if (this.host.running()) this.reconcile(false);
    });
    return false;
  }

  private report(node: CatalogNode, alive: boolean, v: View): void {
    const { host } = this;
    const status = alive ? 'passing' : 'critical';
    this.inFlight.add(node.node);
    host.logger.info({ node: node.node, status, aliveSeen: v.aliveCount, counted: v.counted }, 'gossip check: reporting the node');
    void host.propose({
      t: 'catalog.register', node: node.node, id: node.id, address: node.address, meta: node.meta,
      ...(node.taggedAddresses !== undefined ? { taggedAddresses: node.taggedAddresses } : {}),
      checks: [{ checkId: gossipCheckId, name: gossipCheckName, status, notes: '', output: alive ? gossipCheckOutputAlive : gossipCheckOutputFailed }],
    }).catch((err: unknown) => host.logger.warn({ err, node: node.node }, 'gossip check update failed; retried on the next membership or catalog change'))
      .finally(() => this.inFlight.delete(node.node));
  }
}
