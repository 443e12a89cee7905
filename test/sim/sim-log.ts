/**
 * The replicated log of the simulation, shaped like the JetStream log (DESIGN §3, cluster/jetstream/):
 * one `Sequencer` (the stream) totally orders the messages nodes publish; each node's `SimLog` (its
 * adapter, implementing src/ports/log.ts) publishes a batch as one message with a message id, retries it
 * when no acknowledgement comes (the sequencer drops duplicates by id, as JetStream's duplicate window
 * does), and consumes committed entries in index order. The proposer stamps the batch time from its own
 * clock; the entry time is max(previous entry time, stamp), as the JetStream reader computes it.
 *
 * Faults come from the network: a proposal or its acknowledgement may be lost, every hop has a delay,
 * a partitioned node reaches nothing and receives nothing until healed (then catches up in order), and
 * the sequencer may be unavailable for a while (a leader election). An append whose proposal never got
 * through rejects (the client's write failed); one whose acknowledgement never came, or whose entry
 * this node has not consumed in time, rejects too although the entry may be committed (outcome unknown).
 *
 * `ReplicatedLog` promises kept: entries reach the listener in index order, each once per subscription;
 * `append` resolves only after the listener ran with its entries.
 */
import { EntryClock, LogReach, WritableListeners, type ReachBounds } from '../../src/log/index.ts';
import type { EntriesListener, LogEntry, Proposal, ReplicatedLog, Snapshot } from '../../src/ports/log.ts';
import type { Prng } from '../../src/util/prng.ts';
import type { Scheduler } from './scheduler.ts';
import type { SimClock } from './sim-clock.ts';

/** Tuning of the simulated log; all times in ms. */
export interface LogTuning {
  /** A proposer republishes a message after this long without acknowledgement (its clock). */
  retryMs: number;
  /** Publications of one message before the append gives up. */
  attemptsMax: number;
  /** After the acknowledgement, how long an append waits for its entries to be consumed locally. */
  consumeWaitMs: number;
  /** Probability that one publication is lost on its way to the sequencer. */
  lossProposal: number;
  /** Probability that one acknowledgement is lost on its way back. */
  lossAck: number;
  /** One network hop: uniform in [hopMsMin, hopMsMax]. */
  hopMsMin: number;
  hopMsMax: number;
}

/** What the log needs to know of the simulated world. */
export interface LogWorld {
  sched: Scheduler;
  prng: Prng;
  tuning: LogTuning;
  /** The node's process is up, not partitioned (it may be paused: then its events wait). */
  reachable(node: string): boolean;
  /** The node's current incarnation. */
  incOf(node: string): number;
}

/** What survives a node's crash: its snapshot ("disk"); entries live in the sequencer (the stream). */
export interface NodeDisk {
  snapshot?: Snapshot;
}

/** A fault deliberately planted in the sequencer to show the checker catches it (controls only). */
export type SequencerBug =
  | undefined
  /** Delivers two consecutive writes of one key to `node` in the wrong order (indexes kept). */
  | { kind: 'swap'; node: string };

export interface Committed {
  entries: readonly LogEntry[];
  trueMs: number;
}

export class Sequencer {
  /** The stream: every committed entry, index i at position i − 1. Never compacted (deny_delete). */
  readonly entries: LogEntry[] = [];
  /** True time at which each index committed (position i − 1). */
  readonly trueAt: number[] = [];
  /** Message id → last index of its entries (the duplicate window, here the whole run). */
  private readonly seen = new Map<string, number>();
  private readonly subscribers = new Map<string, SimLog>();
  private lastAtMs = 0;
  /** Until this true time the stream accepts nothing (an election). */
  downUntil = 0;
  duplicatesDropped = 0;
  swapped = 0;
  private readonly swappedAt = new Set<number>();

  constructor(
    private readonly world: LogWorld,
    private readonly onCommit: (c: Committed) => void,
    private readonly bug: SequencerBug = undefined,
  ) {}

  get lastIndex(): number {
    return this.entries.length;
  }

  /** The log of a node's current incarnation subscribes; its earlier one is forgotten. */
  attach(node: string, log: SimLog): void {
    this.subscribers.set(node, log);
  }

  /** A message arrives from `node` (at the sequencer, now). */
  receive(node: string, inc: number, msgId: string, stampMs: number, proposals: readonly Proposal[]): void {
    if (this.world.sched.now < this.downUntil) return; // no leader: the publication is lost
    let last = this.seen.get(msgId);
    if (last !== undefined) {
      this.duplicatesDropped++;
    } else {
      const atMs = Math.max(this.lastAtMs, stampMs);
      this.lastAtMs = atMs;
      const batch: LogEntry[] = proposals.map((p, k) => ({ index: this.entries.length + 1 + k, atMs, pid: p.pid, cmd: p.cmd }));
      for (const e of batch) {
        this.entries.push(e);
        this.trueAt.push(this.world.sched.now);
      }
      last = this.entries.length;
      this.seen.set(msgId, last);
      this.onCommit({ entries: batch, trueMs: this.world.sched.now });
      for (const name of this.subscribers.keys()) this.scheduleDelivery(name, last);
    }
    this.ack(node, inc, msgId, last);
  }

  /** A node that was cut off, paused or restarted reads everything it has not consumed. */
  catchUp(node: string): void {
    this.scheduleDelivery(node, this.lastIndex);
  }

  /** Entry `index` as `node` gets it: the stream's, unless a planted bug says otherwise. */
  entryFor(node: string, index: number): LogEntry {
    const e = this.entries[index - 1]!;
    if (this.bug?.kind !== 'swap' || this.bug.node !== node) return e;
    const pairStart = this.swappedAt.has(index) ? index : this.swappedAt.has(index - 1) ? index - 1 : undefined;
    if (pairStart === undefined) return e;
    const other = this.entries[(pairStart === index ? index + 1 : index - 1) - 1]!;
    return { ...e, pid: other.pid, cmd: other.cmd };
  }

  /** Picks the pairs the swap bug reorders: two consecutive writes of one key, both in `[from, to]`. */
  planSwaps(node: string, from: number, to: number): void {
    if (this.bug?.kind !== 'swap' || this.bug.node !== node) return;
    for (let i = from; i < to; i++) {
      if (this.swappedAt.has(i) || this.swappedAt.has(i - 1) || this.swappedAt.has(i + 1)) continue;
      const a = keyOf(this.entries[i - 1]!);
      const b = keyOf(this.entries[i]!);
      if (a !== undefined && a === b && JSON.stringify(this.entries[i - 1]!.cmd) !== JSON.stringify(this.entries[i]!.cmd)) {
        this.swappedAt.add(i);
        this.swapped++;
      }
    }
  }

  private scheduleDelivery(node: string, upTo: number): void {
    const log = this.subscribers.get(node);
    if (log === undefined) return;
    const { sched } = this.world;
    sched.after(hop(this.world), `deliver ${node} ≤${upTo}`, () => log.deliverUpTo(upTo), node, log.inc);
  }

  private ack(node: string, inc: number, msgId: string, last: number): void {
    const w = this.world;
    if (!w.reachable(node) || w.incOf(node) !== inc || w.prng.chance(w.tuning.lossAck)) return;
    const log = this.subscribers.get(node);
    if (log === undefined || log.inc !== inc) return;
    w.sched.after(hop(w), `ack ${node} ${msgId}`, () => log.onAck(msgId, last), node, inc);
  }
}

function keyOf(e: LogEntry): string | undefined {
  const c = e.cmd;
  return c.t === 'kv.set' || c.t === 'kv.cas' || c.t === 'kv.acquire' || c.t === 'kv.release' || c.t === 'kv.delete' ? c.key : undefined;
}

function hop(w: LogWorld): number {
  return w.prng.int(w.tuning.hopMsMin, w.tuning.hopMsMax);
}

interface Publication {
  msgId: string;
  proposals: Proposal[];
  stampMs: number;
  attempts: number;
  /** Last index of its entries, once acknowledged. */
  last?: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

/** One node incarnation's view of the log. */
export class SimLog implements ReplicatedLog {
  private phase: 'new' | 'open' | 'closed' | 'dead' = 'new';
  private listener: EntriesListener | undefined;
  /** Last index handed to the listener. */
  cursor = 0;
  private counter = 0;
  private readonly inFlight = new Map<string, Publication>();
  /** The client's command object → its proposal id, so the checker can find an acknowledged write's entry. */
  readonly pidOf: WeakMap<object, string>;
  /** Stamps this incarnation's publications after the last entry it read, as the JetStream committer does. */
  private entryClock: EntryClock | undefined;
  private readonly reachListeners = new WritableListeners();

  constructor(
    private readonly world: LogWorld,
    private readonly sequencer: Sequencer,
    readonly node: string,
    readonly inc: number,
    private readonly clock: SimClock,
    private readonly disk: NodeDisk,
    pidOf: WeakMap<object, string>,
  ) {
    this.pidOf = pidOf;
  }

  async open(): Promise<Snapshot | undefined> {
    if (this.phase !== 'new') throw new Error('SimLog.open: already opened');
    this.phase = 'open';
    const s = this.disk.snapshot;
    return s === undefined ? undefined : roundTrip(s);
  }

  subscribe(afterIndex: number, listener: EntriesListener): void {
    if (this.phase !== 'open') throw new Error('SimLog.subscribe: log is not open');
    if (this.listener !== undefined) throw new Error('SimLog.subscribe: the log has a single consumer');
    if (!Number.isSafeInteger(afterIndex) || afterIndex < 0 || afterIndex > this.sequencer.lastIndex) {
      throw new RangeError(`SimLog.subscribe: afterIndex ${afterIndex} is outside 0..${this.sequencer.lastIndex}`);
    }
    this.listener = listener;
    this.cursor = afterIndex;
    this.sequencer.attach(this.node, this);
    this.sequencer.catchUp(this.node);
  }

  private stamp(): number {
    this.entryClock ??= new EntryClock(this.clock);
    return this.entryClock.stamp(this.cursor > 0 ? this.sequencer.entryFor(this.node, this.cursor).atMs : 0);
  }

  append(proposals: readonly Proposal[]): Promise<void> {
    if (this.phase !== 'open') return Promise.reject(new Error(`SimLog.append: log is ${this.phase}`));
    if (proposals.length === 0) return Promise.resolve();
    let wire: Proposal[];
    try {
      wire = proposals.map((p) => ({ pid: p.pid, cmd: JSON.parse(JSON.stringify(p.cmd)) }));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    for (const p of proposals) this.pidOf.set(p.cmd, p.pid);
    return new Promise<void>((resolve, reject) => {
      const pub: Publication = {
        msgId: `${this.node}#${this.inc}#${++this.counter}`, proposals: wire, stampMs: this.stamp(),
        attempts: 0, resolve, reject,
      };
      this.inFlight.set(pub.msgId, pub);
      this.publish(pub);
    });
  }

  async saveSnapshot(snapshot: Snapshot): Promise<void> {
    if (this.phase !== 'open') throw new Error(`SimLog.saveSnapshot: log is ${this.phase}`);
    if (snapshot.index > this.cursor) throw new RangeError(`SimLog.saveSnapshot: index ${snapshot.index} passes consumed ${this.cursor}`);
    if (snapshot.index < (this.disk.snapshot?.index ?? 0)) throw new RangeError('SimLog.saveSnapshot: older than the newest snapshot');
    this.disk.snapshot = roundTrip(snapshot);
  }

  lastIndex(): number {
    return this.cursor;
  }

  async close(): Promise<void> {
    if (this.phase === 'dead') return;
    this.phase = 'closed';
    for (const pub of this.inFlight.values()) pub.reject(new Error('SimLog: closed'));
    this.inFlight.clear();
  }

  /** The process died: nothing of this incarnation runs again (its promises never settle). */
  kill(): void {
    this.phase = 'dead';
    this.inFlight.clear();
  }

  onReachable(listener: (reachable: boolean) => void): void {
    this.reachListeners.add(listener);
  }

  /**
   * Judges from now on whether this node can use the stream, as the JetStream log does (reach-watch.ts):
   * every `askEveryMs` it asks the stream's leader, which answers while the node reaches the stream and
   * no election is under way; the judgement goes to `onReachable`'s listeners.
   */
  judgeReach(bounds: ReachBounds, askEveryMs: number): void {
    const reach = new LogReach(bounds, this.clock.monotonicMs());
    const ask = (): void => {
      if (this.phase === 'dead' || this.phase === 'closed') return;
      const w = this.world;
      if (w.reachable(this.node) && w.sched.now >= this.sequencer.downUntil) reach.answered(this.clock.monotonicMs());
      const changed = reach.look(this.clock.monotonicMs());
      if (changed !== undefined) this.reachListeners.tell(changed);
      this.clock.setTimer(askEveryMs, ask);
    };
    this.clock.setTimer(askEveryMs, ask);
  }

  // ------------------------------------------------------------ driven by the sequencer

  deliverUpTo(upTo: number): void {
    if (this.phase !== 'open' || this.listener === undefined) return;
    if (!this.world.reachable(this.node)) return; // cut off: catches up when healed
    const to = Math.min(upTo, this.sequencer.lastIndex);
    if (to <= this.cursor) return;
    this.sequencer.planSwaps(this.node, this.cursor + 1, to);
    const batch: LogEntry[] = [];
    for (let i = this.cursor + 1; i <= to; i++) batch.push(structuredClone(this.sequencer.entryFor(this.node, i)));
    this.cursor = to;
    this.listener(batch);
    for (const pub of [...this.inFlight.values()]) {
      if (pub.last !== undefined && pub.last <= this.cursor) this.settle(pub, undefined);
    }
  }

  onAck(msgId: string, last: number): void {
    const pub = this.inFlight.get(msgId);
    if (pub === undefined || pub.last !== undefined) return;
    pub.last = last;
    if (last <= this.cursor) { this.settle(pub, undefined); return; }
    this.clock.setTimer(this.world.tuning.consumeWaitMs, () => {
      if (this.inFlight.get(msgId) === pub) this.settle(pub, new Error(`SimLog: entry ${last} committed but not consumed in time`));
    });
  }

  private publish(pub: Publication): void {
    const w = this.world;
    pub.attempts++;
    if (w.reachable(this.node) && !w.prng.chance(w.tuning.lossProposal)) {
      w.sched.after(hop(w), `publish ${pub.msgId}`, () => this.sequencer.receive(this.node, this.inc, pub.msgId, pub.stampMs, pub.proposals));
    }
    this.clock.setTimer(w.tuning.retryMs, () => {
      if (this.inFlight.get(pub.msgId) !== pub || pub.last !== undefined || this.phase !== 'open') return;
      if (pub.attempts < w.tuning.attemptsMax) this.publish(pub);
      else this.settle(pub, new Error(`SimLog: no acknowledgement for ${pub.msgId} after ${pub.attempts} publications`));
    });
  }

  private settle(pub: Publication, err: Error | undefined): void {
    this.inFlight.delete(pub.msgId);
    if (err === undefined) pub.resolve();
    else pub.reject(err);
  }
}

function roundTrip(s: Snapshot): Snapshot {
  return JSON.parse(JSON.stringify({ index: s.index, data: s.data })) as Snapshot;
}
