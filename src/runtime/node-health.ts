/**
 * The owner actor of node health: a member that failed or left gets its gossip check critical
 * (invalidating the sessions bound to it); one that is back gets it passing. One alive member — the
 * owner of the node's name — proposes it; the proposal changes nothing when the check already says so.
 *
 * Failures are reported only by a node that sees a majority of the cluster's Roster nodes alive (itself
 * included). A node cut off from the others, or just woken from a pause with a stale view, sees them all
 * failed: its reports would commit once it is reconnected and invalidate the sessions of healthy nodes.
 *
 * The majority is judged against the Roster nodes of the catalog that have not left. A node that left
 * is recorded so in the log, where every node reads it, also after a restart, which forgets gossip's
 * table: its gossip check is critical with the output `Agent left the cluster`. The node writes that
 * itself as it stops (`leaving`), the owner writes it for a member gossip says left, and
 * `force-leave` writes it (`markLeft`), also for a node no member has heard since its own start.
 * A node deregistered from the catalog does not count either. An entry that changes this set judges
 * failures again, as a membership change does. A node whose check says it left but that gossip hears
 * alive is counted: it is back, and its check turns passing.
 *
 * And only once the failure has held for `failureConfirmMs` in such a view: gossip notices each peer on
 * its own timer, so a node being cut off first sees one peer failed and the rest alive (a majority) for
 * a moment, and a node being reconnected first sees one peer back; a report made then would be wrong.
 *
 * After any other entry that changed a gossip check (`afterEntries`) it only corrects towards alive: a
 * report that got through anyway is undone by the owner, which sees the node alive, or by the node
 * itself, which is evidently running (only a report of the failure detector's or a left mark, recognised
 * by its output). New failure reports come only from membership changes, restores and changes of the set
 * of counted nodes, so two nodes whose views disagree (an asymmetric partition) cannot keep proposing
 * against each other: a failure report changes no count, and a left mark is written again only on a
 * membership change. A restore is judged as a membership change: it may bring Roster nodes of another
 * cluster, which no member will ever be.
 *
 * A single agent (`alone`) is the whole cluster: no other node can become a member, so every other Roster
 * node of its catalog (one a restore brought) is failed, judged at once, with no grace to wait for gossip
 * and no majority to see (the agent is all of it). Nodes registered through the catalog without a gossip
 * check (external nodes) are never judged, here or in a cluster.
 */
import type { Command } from '../domain/commands.ts';
import {
  gossipCheckId, gossipCheckName, gossipCheckOutputAlive, gossipCheckOutputFailed, gossipCheckOutputLeft,
} from '../domain/limits.ts';
import type { CatalogNode, HealthCheck } from '../domain/types.ts';
import { intervalMs, type Clock, type TimerHandle } from '../ports/clock.ts';
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
  /** The Roster nodes that count towards the majority: this node, and every other that has not left. */
  counted: CatalogNode[];
  aliveCount: number;
  inMajority: boolean;
  graceOver: boolean;
  /** The interval clock's reading (intervalMs). */
  now: number;
}

/**
 * What set off a look: a membership change (or the grace's end, a confirmation, a restore): everything is
 * judged; an entry that changed the set of counted nodes: failures and returns, not left marks; any
 * other entry that changed a gossip check: returns only.
 */
type Cause = 'membership' | 'nodeSet' | 'entries';

/** What a gossip check is set to: passing, critical as failed, critical as left. */
type Verdict = 'alive' | 'failed' | 'left';

/** How often a wait for gossip looks again. */
const gossipWaitStepMs = 100;

/** The node's gossip check, when it is a Roster node's (registered by an agent, with the check's own name). */
function gossipCheckOf(state: RegistryState, node: string): HealthCheck | undefined {
  const check = state.checkOf(node, gossipCheckId);
  return check !== undefined && check.source === 'catalog' && check.name === gossipCheckName ? check : undefined;
}

/** Whether the log records the node as left: its gossip check is critical with the left output. */
function markedLeft(check: HealthCheck | undefined): boolean {
  return check?.status === 'critical' && check.output === gossipCheckOutputLeft;
}

export class NodeHealthOwner {
  private startedAtMs = 0;
  /** Set once the node listens to membership: from then on gossip-check entries are checked against it. */
  private watching = false;
  /** Set once this node marked itself left as it stops: it no longer undoes that mark. */
  private leavingNow = false;
  /** Nodes whose gossip check update this node has proposed and not yet seen applied. */
  private readonly inFlight = new Set<string>();
  /** Nodes this node has seen failed, in a majority view, since when (its interval clock: a wall-clock step neither delays nor hastens the report). */
  private readonly failureSince = new Map<string, number>();
  /** Failed nodes whose report this owner withholds for want of a majority, warned about once. */
  private readonly withheld = new Set<string>();
  /** The counted Roster nodes of the catalog as last judged, left marks included and gossip not (see nodeSetKey). */
  private lastNodeSet = '';
  private confirmTimer: TimerHandle | undefined;
  /** A restore was applied and its nodes not yet judged in a majority view (see restored). */
  private restoreUnjudged = false;

  constructor(private readonly host: NodeHealthHost, private readonly o: NodeHealthOptions) {}

  /** The grace for unheard members counts from here. */
  start(): void {
    this.startedAtMs = intervalMs(this.host.clock);
  }

  /** From here on, entries that change a gossip check are looked at (`entriesChanged`). */
  watch(): void {
    this.watching = true;
    this.lastNodeSet = this.nodeSetKey();
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

  /** Membership changed (or the grace ended): report failures, departures and returns. */
  membershipChanged(): void {
    this.reconcile('membership');
  }

  /**
   * An applied entry changed a gossip check: correct towards alive only, unless the set of counted nodes
   * changed (a node left, came back, was registered or deregistered), which can make a majority where there
   * was none, or a restore is still to be judged.
   */
  entriesChanged(): void {
    if (!this.watching || !this.host.running()) return;
    if (this.restoreUnjudged) {
      this.judgeRestore();
      return;
    }
    const key = this.nodeSetKey();
    const cause = key === this.lastNodeSet ? 'entries' : 'nodeSet';
    this.lastNodeSet = key;
    this.reconcile(cause);
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

  /**
   * `force-leave`: records in the log that the Roster node `name` left (its gossip check critical, with
   * the left output), so no node counts it towards the majority again, whatever its gossip has heard.
   * False when the catalog holds no Roster node of that name. Rejects when the log does not take the write.
   */
  async markLeft(name: string): Promise<boolean> {
    const state = this.host.state();
    const node = state.nodes.get(name);
    const check = gossipCheckOf(state, name);
    if (node === undefined || check === undefined) return false;
    if (markedLeft(check)) return true;
    const r = await this.host.propose(gossipCheckCommand(node, 'left'));
    if (!r.ok) throw new Error(`recording that node ${name} left failed: ${r.reason}`);
    this.host.logger.info({ node: name }, 'gossip check: the node is recorded as left');
    return true;
  }

  /** This node stops and leaves the cluster: it records that in the log first (not a single agent, which is the whole cluster). */
  async leaving(): Promise<void> {
    this.leavingNow = true;
    if (this.o.alone === true || !this.host.running()) return;
    await this.markLeft(this.host.nodeName);
  }

  private judgeRestore(): void {
    this.lastNodeSet = this.nodeSetKey();
    if (!this.view().inMajority) {
      this.reconcile('entries');
      return;
    }
    this.restoreUnjudged = false;
    this.reconcile('membership');
  }

  private reconcile(cause: Cause): void {
    const view = this.view();
    for (const node of view.rosterNodes) this.reconcileNode(node, view, cause);
  }

  /** The Roster nodes of the catalog that have not left, as the log says (gossip aside): a change of this set re-judges failures. */
  private nodeSetKey(): string {
    const state = this.host.state();
    return [...state.nodes.keys()].filter((n) => {
      const check = gossipCheckOf(state, n);
      return check !== undefined && !markedLeft(check);
    }).sort().join('\n');
  }

  private view(): View {
    const { host } = this;
    const state = host.state();
    const members = new Map(host.membership.members().map((m) => [m.name, m]));
    const alone = this.o.alone === true;
    const graceOver = alone || intervalMs(host.clock) - this.startedAtMs >= this.o.graceMs;
    const rosterNodes = [...state.nodes.values()].filter((node) => gossipCheckOf(state, node.node) !== undefined);
    // Alone, the agent is every member there is; in a cluster a node not heard yet may be a member cut off,
    // while one that left, by gossip or by the log's record, is not a member any more unless heard alive again.
    const counted = rosterNodes.filter((node) => {
      if (node.node === host.nodeName) return true;
      const status = members.get(node.node)?.status;
      return !alone && status !== 'left' && (status === 'alive' || !markedLeft(gossipCheckOf(state, node.node)));
    });
    const aliveCount = counted.filter((node) => node.node === host.nodeName || members.get(node.node)?.status === 'alive').length;
    return {
      members, rosterNodes, counted, aliveCount, inMajority: alone || 2 * aliveCount > counted.length,
      graceOver, now: intervalMs(host.clock),
    };
  }

  private reconcileNode(node: CatalogNode, v: View, cause: Cause): void {
    const self = node.node === this.host.nodeName;
    const member = v.members.get(node.node);
    const alive = self || member?.status === 'alive';
    const verdict: Verdict = alive ? 'alive' : member?.status === 'left' ? 'left' : 'failed';
    const reportable = verdict === 'failed' && v.inMajority && (member !== undefined || v.graceOver);
    if (!reportable) this.failureSince.delete(node.node);
    const check = gossipCheckOf(this.host.state(), node.node)!;
    if (verdict !== 'failed' || check.status === 'critical') this.withheld.delete(node.node);
    if (this.inFlight.has(node.node)) return;
    if (verdict === 'alive') {
      if (this.shouldRevive(check, self, cause)) this.report(node, 'alive', v);
      return;
    }
    const owner = this.host.owns(`node:${node.node}`);
    if (verdict === 'left') {
      // A left mark is news only on a membership change: written again on entries it could answer a return of the owner's.
      if (cause === 'membership' && !markedLeft(check) && owner) this.report(node, 'left', v);
      return;
    }
    if (cause === 'entries' || check.status === 'critical' || !owner) return;
    if (!reportable) {
      if (member !== undefined || v.graceOver) this.warnWithheld(node.node, v);
      return;
    }
    if (this.confirmed(node.node, v.now)) this.report(node, 'failed', v);
  }

  /**
   * Whether an alive node's check should be set passing. The node itself undoes the failure detector's
   * reports and left marks about it (not a status written by hand), unless it is leaving; the owner
   * undoes a failure report at once, and a left mark on a membership change only: a node marks itself
   * left a moment before gossip hears it leave, and the owner must not undo that meanwhile.
   */
  private shouldRevive(check: HealthCheck, self: boolean, cause: Cause): boolean {
    if (check.status === 'passing') return false;
    if (self) return !this.leavingNow && (check.output === gossipCheckOutputFailed || markedLeft(check));
    if (!this.host.owns(`node:${check.node}`)) return false;
    return !markedLeft(check) || cause === 'membership';
  }

  /** Whether the node's failure has held long enough; if not, a look is scheduled for when it will have. */
  private confirmed(name: string, now: number): boolean {
    const since = this.failureSince.get(name) ?? now;
    this.failureSince.set(name, since);
    if (now - since >= this.o.failureConfirmMs) return true;
    // One pending look at a time; it reschedules itself for any failure still unconfirmed then.
    this.confirmTimer ??= this.host.clock.setTimer(since + this.o.failureConfirmMs - now, () => {
      this.confirmTimer = undefined;
      if (this.host.running()) this.reconcile('membership');
    });
    return false;
  }

  /** Once per failure: the owner does not report it, for want of a majority, and says what would let it. */
  private warnWithheld(name: string, v: View): void {
    if (this.withheld.has(name)) return;
    this.withheld.add(name);
    const unseen = v.counted.filter((n) => n.node !== this.host.nodeName && v.members.get(n.node)?.status !== 'alive').map((n) => n.node);
    this.host.logger.warn({ node: name, aliveSeen: v.aliveCount, counted: v.counted.length, notAlive: unseen },
      `gossip check: node ${name} is not alive, but its failure is not reported: this node sees ${v.aliveCount} of the `
      + `${v.counted.length} Roster nodes that have not left alive, not a majority, so the sessions bound to it stay valid. `
      + `For each of ${unseen.join(', ')} that is gone for good, run roster force-leave <node> (or deregister it from the catalog): `
      + 'a node that left does not count, and the failure is reported once the nodes alive are a majority again');
  }

  private report(node: CatalogNode, verdict: Verdict, v: View): void {
    const { host } = this;
    this.inFlight.add(node.node);
    host.logger.info({ node: node.node, status: verdict === 'alive' ? 'passing' : 'critical', verdict, aliveSeen: v.aliveCount, counted: v.counted.length },
      'gossip check: reporting the node');
    void host.propose(gossipCheckCommand(node, verdict))
      .catch((err: unknown) => host.logger.warn({ err, node: node.node }, 'gossip check update failed; retried on the next membership or catalog change'))
      .finally(() => this.inFlight.delete(node.node));
  }
}

/** The registration that sets the node's gossip check to what the verdict says, keeping the node as the catalog holds it. */
function gossipCheckCommand(node: CatalogNode, verdict: Verdict): Command {
  const output = verdict === 'alive' ? gossipCheckOutputAlive : verdict === 'left' ? gossipCheckOutputLeft : gossipCheckOutputFailed;
  return {
    t: 'catalog.register', node: node.node, id: node.id, address: node.address, meta: node.meta,
    ...(node.taggedAddresses !== undefined ? { taggedAddresses: node.taggedAddresses } : {}),
    checks: [{ checkId: gossipCheckId, name: gossipCheckName, status: verdict === 'alive' ? 'passing' : 'critical', notes: '', output }],
  };
}
