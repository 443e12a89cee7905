/**
 * The fault injector of the chaos phase: every few seconds it partitions, cuts off from the stream alone
 * (with `logCuts`), crashes, gracefully restarts or pauses one healthy node (never more than a minority at
 * a time), or holds a stream election.
 */
import type { Prng } from '../../src/util/prng.ts';
import { healLog, healNode, resumeNode } from './sim-nodes.ts';
import type { SimNode, SimWorld } from './sim-world.ts';

/**
 * How long a fault lasts: mostly shorter than the suspicion time or a few times it; one in five as long
 * as a TTL or two, so timers of paused or cut-off owners come due meanwhile and fire late.
 */
function faultMs(p: Prng): number {
  return p.chance(0.2) ? p.int(10_000, 35_000) : p.int(200, 8_000);
}

export function fault(w: SimWorld): void {
  if (!w.chaos) return;
  const p = w.prng;
  const faulty = [...w.nodes.values()].filter((n) => !n.healthy).length;
  const candidates = [...w.nodes.values()].filter((n) => n.healthy);
  const kind = p.pick((w.o.logCuts ?? true) ? kindsWithLogCuts : kinds);
  const canHit = candidates.length > 0 && faulty < Math.ceil(w.names.length / 2);
  if (kind === 'election') {
    w.faults.elections++;
    w.sequencer.downUntil = Math.max(w.sequencer.downUntil, w.sched.now + p.int(200, 2_500));
  } else if (kind !== 'none' && canHit) {
    hit(w, kind, p.pick(candidates));
  }
  const [gapMin, gapMax] = w.o.faultGapMs ?? [700, 3_500];
  w.sched.after(p.int(gapMin, gapMax), 'fault', () => fault(w));
}

const kinds = ['partition', 'partition', 'crash', 'crash', 'restart', 'pause', 'pause', 'election', 'none'] as const;
const kindsWithLogCuts = [...kinds, 'logcut'] as const;

function hit(w: SimWorld, kind: 'partition' | 'logcut' | 'crash' | 'restart' | 'pause', n: SimNode): void {
  const p = w.prng;
  if (kind === 'logcut') {
    w.faults.logCuts++;
    n.logCut = true;
    n.disturbances++;
    w.sched.after(faultMs(p), `heal log ${n.name}`, () => healLog(w, n));
  } else if (kind === 'partition') {
    w.faults.partitions++;
    n.partitioned = true;
    n.disturbances++;
    w.sched.after(faultMs(p), `heal ${n.name}`, () => healNode(w, n));
  } else if (kind === 'restart') {
    // A graceful restart: stop() snapshots and closes the log (pending appends reject), then the process exits.
    w.faults.restarts++;
    const inc = n.inc;
    const downMs = faultMs(p);
    void n.runtime?.stop().catch(() => {}).finally(() => {
      if (n.inc !== inc || !n.up) return;
      w.crash(n);
      w.sched.after(downMs, `restart ${n.name}`, () => { if (!n.up) w.boot(n); });
    });
  } else if (kind === 'crash') {
    w.faults.crashes++;
    w.crash(n);
    w.sched.after(faultMs(p), `restart ${n.name}`, () => { if (!n.up) w.boot(n); });
  } else {
    w.faults.pauses++;
    n.paused = true;
    n.disturbances++;
    w.sched.after(faultMs(p), `resume ${n.name}`, () => resumeNode(w, n));
  }
}
