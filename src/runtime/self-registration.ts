/**
 * This agent's own node in the catalog, with its gossip check: registered at start, and again whenever
 * applied entries leave it missing (a restore, a client's deregistration; Consul's anti-entropy).
 *
 * The node ID is the agent's own (its data dir's `node-id`). At start another node of the catalog may hold
 * it under another name: this agent's node before a rename, or the live node whose data dir this one was
 * copied from (a cloned machine). A single node takes the ID over at once: the holder is replaced (a
 * rename). A cluster node first waits until gossip has heard the holder or the start's grace is over, and
 * takes the ID over only when the holder is not a live member with this ID. While the holder lives this
 * node stays out of the catalog, so it takes nothing of the holder's (its services, checks and sessions),
 * and gossip stops whichever of the two started later (cluster/identity-clash.ts).
 */
import type { CatalogRegister, Command } from '../domain/commands.ts';
import { RegistryError } from '../domain/errors.ts';
import { gossipCheckId, gossipCheckName, gossipCheckOutputAlive } from '../domain/limits.ts';
import { intervalMs, type Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { Member } from '../ports/membership.ts';
import type { RegistryState, Result } from '../state/index.ts';

/** This agent's node as it registers it. */
export interface Self { name: string; id: string; address: string; meta: Readonly<Record<string, string>> }

/** What the registration needs from its node. */
export interface SelfRegistrationHost {
  readonly self: Self;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A cluster node: another node holding this ID may be live. */
  readonly clustered: boolean;
  state(): RegistryState;
  members(): readonly Member[];
  propose(cmd: Command): Promise<Result>;
  /** Resolves once gossip has heard every Roster node of the catalog, or the start's grace is over. */
  heardOrGraceOver(): Promise<void>;
  /** Runs the write now, or once the log can store writes again (DeferredWrites). */
  onceWritable(what: string, write: () => Promise<void>): Promise<void>;
  running(): boolean;
}

const what = 'this node\'s registration';
/** While a live node holds this node's ID, how often it is looked at again. */
const holderLookMs = 1_000;
/**
 * The least time between two registrations of this node again. Two agents given one node name on one log,
 * whose gossip does not join them, each write their own ID over the other's: without it they did so
 * thousands of times a second, growing the log without end; now once a second each, with a warning.
 */
const againSpacingMs = 1_000;

export class SelfRegistration {
  /** Set while the start waits for a live holder of this node's ID: nothing registers this node meanwhile. */
  private waitingForId = false;
  /** When this node was last registered again (entriesApplied; the interval clock's ms), and whether a later turn is awaited. */
  private againAtMs = -Infinity;
  private againWaiting = false;
  private warnedShared = false;
  /** Resolves once the start registered this node (see `done`). */
  private markDone: () => void = () => {};
  /**
   * Resolves once this node is registered at start: at once, or after the wait for a holder of its ID.
   * What registers on this node (the config file's services and checks) waits for it.
   */
  readonly done = new Promise<void>((resolve) => { this.markDone = resolve; });

  constructor(private readonly host: SelfRegistrationHost) {}

  /** True while the start waits for a live holder of this node's ID (`done` then resolves later, if ever). */
  get waiting(): boolean {
    return this.waitingForId;
  }

  /** At start: registers now, or, in a cluster where another node holds this ID, begins the wait described above. */
  async atStart(): Promise<void> {
    const { host } = this;
    if (host.clustered && host.state().nodeHoldingId(host.self.id, host.self.name) !== undefined) {
      this.waitingForId = true;
      void this.onceIdFree().then(() => {
        this.waitingForId = false;
        this.markDone();
      }, (err: unknown) => {
        this.waitingForId = false;
        host.logger.warn({ err }, 'registering this node failed');
      });
      return;
    }
    await host.onceWritable(what, () => this.register(true));
    this.markDone();
  }

  /**
   * After applied entries that touched this node or restored the state: registers it again if it is
   * missing or changed, at most once every `againSpacingMs` (a later need waits for its turn).
   */
  entriesApplied(): void {
    const { host } = this;
    if (this.againWaiting || this.waitingForId || !host.running() || selfRegistered(host.state(), host.self)) return;
    const waitMs = this.againAtMs + againSpacingMs - intervalMs(host.clock);
    if (waitMs > 0) {
      this.againWaiting = true;
      host.clock.setTimer(waitMs, () => {
        this.againWaiting = false;
        this.entriesApplied();
      });
      return;
    }
    this.againAtMs = intervalMs(host.clock);
    const holder = host.state().nodes.get(host.self.name);
    if (holder !== undefined && holder.id.toLowerCase() !== host.self.id.toLowerCase() && !this.warnedShared) {
      this.warnedShared = true;
      host.logger.warn({ node: host.self.name, id: host.self.id, other: holder.id },
        'another agent registers this node name with its own ID on the same log: give each agent its own node name (--node-name); this node registers itself again at most once a second');
    }
    host.onceWritable(what, () => this.register(false))
      .catch((err: unknown) => host.logger.warn({ err }, 'registering this node again failed'));
  }

  private async onceIdFree(): Promise<void> {
    const { host } = this;
    await host.heardOrGraceOver();
    let warned = false;
    while (host.running()) {
      const holder = liveHolder(host.state(), host.members(), host.self);
      if (holder === undefined) {
        await host.onceWritable(what, () => this.register(true));
        return;
      }
      if (!warned) {
        host.logger.warn({ id: host.self.id, holder: holder.name, http: holder.http },
          `this node's ID is held by the live node ${holder.name}, whose data dir this one looks copied from: this node is not registered while that node runs, `
          + 'and of the two the one started later stops');
        warned = true;
      }
      await new Promise<void>((resolve) => host.clock.setTimer(holderLookMs, resolve));
    }
  }

  private register(reclaim: boolean): Promise<void> {
    return registerSelf(this.host, this.host.self, reclaim);
  }
}

/** The live member, heard with this node's ID, that holds the ID in the catalog under its own name; undefined when none. */
function liveHolder(state: RegistryState, members: readonly Member[], self: Self): Member | undefined {
  const holder = state.nodeHoldingId(self.id, self.name)?.node;
  if (holder === undefined) return undefined;
  return members.find((m) => m.name === holder && m.status === 'alive' && m.id.toLowerCase() === self.id.toLowerCase());
}

/**
 * This agent's registration of its node, with its gossip check passing. With `reclaim` (at start, see
 * SelfRegistration) a node holding its ID under another name is replaced, and a warning says so. Without
 * it (registering again later) the node is registered beside such a holder, with a warning, so two agents
 * sharing one ID do not remove each other's node in turn.
 */
export function selfRegistration(state: RegistryState, self: Self, logger: Logger, reclaim: boolean): CatalogRegister {
  const holder = state.nodeHoldingId(self.id, self.name)?.node;
  if (holder !== undefined && reclaim) warnReplaced(state, self.id, holder, logger);
  if (holder !== undefined && !reclaim) logger.warn({ id: self.id, holder }, 'this node\'s ID is also held by another node (is one data dir copied?); both are kept');
  const replaces = reclaim ? holder : undefined;
  return {
    t: 'catalog.register', node: self.name, id: self.id, address: self.address, meta: { ...self.meta }, ...(replaces !== undefined ? { replaces } : {}),
    checks: [{ checkId: gossipCheckId, name: gossipCheckName, status: 'passing', notes: '', output: gossipCheckOutputAlive }],
  };
}

/**
 * What replacing the holder of this node's ID ends (catalog.ts removes the node): its services with their
 * checks, and every session on it, bound to checks or not, each applying its Behavior to the locks it holds.
 */
function warnReplaced(state: RegistryState, id: string, holder: string, logger: Logger): void {
  const sessions = state.sessionsOfNode(holder);
  const locks = sessions.reduce((n, s) => n + (state.locksBySession.get(s.id)?.size ?? 0), 0);
  const services = state.servicesOfNode(holder).length;
  logger.warn({ id, holder, services, sessions: sessions.length, locks },
    `this node's ID was held by another node: that node is removed from the catalog (node ${holder}, not running: this node's former name, or the node whose data dir this one was copied from): `
    + `its ${services} service(s) with their checks go, and its ${sessions.length} session(s) are invalidated, every one, bound to checks or not, `
    + `releasing or deleting (by each session's Behavior) the ${locks} lock(s) they hold`);
}

/**
 * Proposes this agent's registration (selfRegistration). A rename the cluster cannot take yet, while a
 * member of an older release runs, is proposed as a plain registration instead, beside the holder.
 */
export async function registerSelf(host: { state(): RegistryState; propose(cmd: Command): Promise<Result>; logger: Logger }, self: Self, reclaim: boolean): Promise<void> {
  const cmd = selfRegistration(host.state(), self, host.logger, reclaim);
  let r: Result;
  try {
    r = await host.propose(cmd);
  } catch (err) {
    if (cmd.replaces === undefined || !(err instanceof RegistryError && err.error === 'clusterBehind')) throw err;
    host.logger.warn({ holder: cmd.replaces }, 'an older release runs in the cluster: this node is registered beside the node holding its ID');
    const { replaces: _, ...plain } = cmd;
    r = await host.propose(plain);
  }
  if (!r.ok) throw new Error(`registering this node failed: its ID ${self.id} is held by node ${r.detail}`);
}


/** Whether the catalog holds this agent's node as it registered it, with its gossip check (of any status). */
export function selfRegistered(state: RegistryState, self: Self): boolean {
  const n = state.nodes.get(self.name);
  return n !== undefined && n.id === self.id && n.address === self.address && sameMeta(n.meta, self.meta)
    && state.checkOf(self.name, gossipCheckId) !== undefined;
}

function sameMeta(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
