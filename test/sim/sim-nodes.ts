/**
 * The life of a simulated node: boot (a new incarnation: clock, log, membership and a real Runtime, from
 * the node's snapshot and the log), crash, resume after a pause, heal after a partition, and the gossip
 * round that carries heartbeats between nodes that can talk.
 */
import { silentLogger } from '../../src/ports/logger.ts';
import { Runtime, type RuntimeOptions } from '../../src/runtime/index.ts';
import { SimClock } from './sim-clock.ts';
import { SimLog } from './sim-log.ts';
import { SimMembership } from './sim-membership.ts';
import type { SimNode, SimWorld } from './sim-world.ts';

export const suspicionMs = 3_000;
export const heartbeatMs = 500;
/** A node's stream silent this long counts as cut off, as the agent judges it (twice the suspicion timeout). */
export const logCutJudgedMs = 2 * suspicionMs;
/** Its stream answering this long without such a silence counts as back (reach-watch.ts: twice the silence). */
const logBackMs = 2 * logCutJudgedMs;
/** How often a node asks the stream's leader (the JetStream log's leadership watch: every 2 s). */
const reachAskMs = 2_000;
const membershipGraceMs = 3_000;
const snapshotEveryEntries = 50;

/** Options of a node's Runtime that a workload adds (probes of its checks, the probe jitter source, check settings). */
export type RuntimeExtras = Pick<RuntimeOptions, 'probeFor' | 'random' | 'checks'>;

export function bootNode(w: SimWorld, n: SimNode, extras: (n: SimNode, inc: number) => RuntimeExtras): void {
  n.inc++;
  n.up = true;
  n.started = false;
  n.paused = false;
  n.deferred = [];
  if (n.disk.snapshot !== undefined) w.faults.bootsFromSnapshot++;
  const inc = n.inc;
  const clock = new SimClock(w.sched, n.hw, n.name, inc);
  const log = new SimLog(w.logWorld, w.sequencer, n.name, inc, clock, n.disk, w.pidOf);
  const membership = new SimMembership(w.sched, clock, n.name, inc, suspicionMs);
  const runtime = new Runtime({
    log, clock, logger: silentLogger, nodeName: n.name, nodeId: `id-${n.name}`, address: `${n.name}:8500`,
    snapshotEveryEntries, membership, membershipGraceMs, ...extras(n, inc),
    onFatal: (err) => w.checker.report('node-fatal', `${n.name}#${inc}: ${err.message}`),
  });
  if (w.o.logCuts ?? true) {
    // As the agent wires them (assemble.ts): a node cut off from the stream tells the others through gossip.
    log.judgeReach({ unreachableAfterMs: logCutJudgedMs, backAfterMs: logBackMs }, reachAskMs);
    log.onReachable((reachable) => membership.setLogReachable(reachable));
  }
  n.runtime = runtime;
  n.log = log;
  n.membership = membership;
  w.sched.at(w.sched.now, `start ${n.name}#${inc}`, () => {
    runtime.start().then(() => {
      if (n.inc === inc) n.started = true;
    }, (err: unknown) => {
      // main.ts exits when start fails (its registration could not commit): the supervisor restarts it.
      if (n.inc !== inc || !n.up) return;
      w.faults.startFailures++;
      w.note(`${w.sched.now} ${n.name}#${inc} start failed: ${String(err)}`);
      w.crash(n);
      w.sched.after(1_000, `restart ${n.name}`, () => { if (!n.up) w.boot(n); });
    });
  }, n.name, inc);
}

export function crashNode(n: SimNode): void {
  n.up = false;
  n.started = false;
  n.paused = false;
  n.deferred = [];
  n.log?.kill();
  n.runtime = undefined;
  n.log = undefined;
  n.membership = undefined;
}

export function resumeNode(w: SimWorld, n: SimNode): void {
  if (!n.paused) return;
  n.paused = false;
  const deferred = n.deferred;
  n.deferred = [];
  for (const ev of deferred) w.sched.requeue(ev);
}

export function healNode(w: SimWorld, n: SimNode): void {
  if (!n.partitioned) return;
  n.partitioned = false;
  if (n.up) w.sequencer.catchUp(n.name);
}

/** The node reaches the stream again (not one cut off for good), and reads what it missed. */
export function healLog(w: SimWorld, n: SimNode): void {
  if (!n.logCut || n.logCutForGood) return;
  n.logCut = false;
  if (n.up) w.sequencer.catchUp(n.name);
}

/** One heartbeat round: every node that talks is heard by every other that talks and is not paused. */
export function gossip(w: SimWorld): void {
  const talks = (n: SimNode) => n.up && !n.partitioned;
  for (const x of w.nodes.values()) {
    if (!talks(x)) continue;
    for (const y of w.nodes.values()) if (y !== x && talks(y) && !y.paused) x.membership?.hear(y.name, y.membership?.logUnreachable);
  }
  for (const x of w.nodes.values()) if (x.up) x.membership?.sweep();
  w.sched.after(heartbeatMs, 'gossip', () => gossip(w));
}
