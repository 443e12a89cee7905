/**
 * Simulated true time and the event queue. Every action of a run is an event at a true-time instant
 * (integer ms since the start of the run); events at the same instant run in the order they were
 * scheduled. Events may belong to a node incarnation: those of a crashed incarnation are dropped and
 * those of a paused node wait until it resumes (then run late, in their original order).
 */
export interface SimEvent {
  at: number;
  seq: number;
  /** The node the event runs on (undefined: the network, the sequencer, the fault injector). */
  node?: string;
  /** The node incarnation it belongs to; a different current incarnation drops the event. */
  inc?: number;
  label: string;
  fn: () => void;
}

/** How the scheduler asks whether a node may run an event now. */
export interface NodeGate {
  /** 'run' | 'defer' (paused: keep for later) | 'drop' (incarnation gone). */
  gate(node: string, inc: number | undefined): 'run' | 'defer' | 'drop';
  defer(ev: SimEvent): void;
}

export class Scheduler {
  now = 0;
  private seq = 0;
  private readonly heap: SimEvent[] = [];
  events = 0;

  constructor(private readonly gates: NodeGate) {}

  at(at: number, label: string, fn: () => void, node?: string, inc?: number): void {
    const ev: SimEvent = { at: Math.max(this.now, Math.ceil(at)), seq: this.seq++, label, fn };
    if (node !== undefined) ev.node = node;
    if (inc !== undefined) ev.inc = inc;
    this.push(ev);
  }

  after(ms: number, label: string, fn: () => void, node?: string, inc?: number): void {
    this.at(this.now + ms, label, fn, node, inc);
  }

  /** Re-queues a deferred event at the current instant, keeping its label and node. */
  requeue(ev: SimEvent): void {
    this.push({ ...ev, at: this.now, seq: this.seq++ });
  }

  get pending(): number {
    return this.heap.length;
  }

  peekAt(): number | undefined {
    return this.heap[0]?.at;
  }

  /** Pops the next runnable event (dropping and deferring as the gates say), or undefined past `until`. */
  popUntil(until: number): SimEvent | undefined {
    for (;;) {
      const top = this.heap[0];
      if (top === undefined || top.at > until) return undefined;
      const ev = this.pop();
      this.now = ev.at;
      if (ev.node !== undefined) {
        const g = this.gates.gate(ev.node, ev.inc);
        if (g === 'drop') continue;
        if (g === 'defer') { this.gates.defer(ev); continue; }
      }
      this.events++;
      return ev;
    }
  }

  private less(a: SimEvent, b: SimEvent): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(ev: SimEvent): void {
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): SimEvent {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
