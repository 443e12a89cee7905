/**
 * The search for one key (see linearizability.ts for what it promises and how it goes): Wing & Gong over a
 * dancing-links list of calls and returns, with Lowe's memo of failed configurations, and the witness
 * of the deepest dead end when there is no order.
 */
import { formatOp, type Op } from './history.ts';
import type { Model } from './models.ts';

export type KeyVerdict =
  | { key: string; valid: true; ops: number }
  | { key: string; valid: false; ops: number; reason: string; witness: Op[] }
  | { key: string; valid: 'unknown'; ops: number; reason: string };

/** Search steps (model steps and list moves) between two looks at the clock. */
const stepsPerClockRead = 1024;
/** Linearized ops shown before the stuck op in a witness. */
const witnessHistoryOps = 6;
/** Unknown ops shown as candidates in a witness. */
const witnessUnknownOps = 4;

export interface Limits { deadlineMs: number; budgetMs: number; memoLeft: number }

/** A choice on the search stack, with what is needed to undo it. */
interface Frame<S> {
  /** Index into the ok ops, or into the unknown ops. */
  kind: 'ok' | 'unknown';
  idx: number;
  /** The configuration before the choice. */
  state: S;
  hash: string;
  frontier: number;
  maxDone: number;
  /** Memo key (ok set and state) of the configuration the choice led to. */
  key: string;
  /** For an unknown op: the order in which unknown ops were being tried there, and the next position. */
  order?: number[];
  pos?: number;
}

interface DeadEnd { okDone: number; stuck: Op; candidates: Op[]; recent: Op[]; stateHash: string }

type Outcome = { valid: true } | { valid: false; deadEnd: DeadEnd } | { valid: 'unknown'; why: string };

export class KeySearch<S> {
  /** Ok ops sorted by call time: op i has call node 2i and return node 2i+1; `head` is the sentinel. */
  readonly #ok: Op[];
  /** Unknown ops sorted by call time. */
  readonly #unknown: Op[];
  readonly #unknownBit: bigint[];
  readonly #next: Int32Array;
  readonly #prev: Int32Array;
  readonly #head: number;

  #state: S;
  #hash: string;
  /** done[i] = 1 when ok op i is linearized; all below `frontier` are; none above `maxDone` is. */
  readonly #done: Uint8Array;
  #okDone = 0;
  #frontier = 0;
  #maxDone = -1;
  readonly #unknownUsed: Uint8Array;
  #used = 0n;
  readonly #stack: Frame<S>[] = [];
  /** Failed configurations: ok set and state → the sets of unknown ops used there (none a superset of another). */
  readonly #failed = new Map<string, bigint[]>();
  #steps = 0;
  #clockAtStep = stepsPerClockRead;
  #deadEnd: DeadEnd | undefined;

  readonly model: Model<S>;

  constructor(readonly key: string, readonly keyOps: Op[], model: Model<S>, readonly limits: Limits) {
    this.model = model.forHistory?.(keyOps.filter((op) => op.outcome !== 'fail')) ?? model;
    const byCall = (a: Op, b: Op) => a.callMs - b.callMs || a.id - b.id;
    this.#ok = keyOps.filter((op) => op.outcome === 'ok').sort(byCall);
    this.#unknown = keyOps.filter((op) => op.outcome === 'unknown').sort(byCall);
    this.#unknownBit = this.#unknown.map((_, j) => 1n << BigInt(j));
    const n = this.#ok.length;
    this.#head = 2 * n;
    this.#next = new Int32Array(2 * n + 1).fill(-1);
    this.#prev = new Int32Array(2 * n + 1).fill(-1);
    this.#link();
    this.#done = new Uint8Array(n);
    this.#unknownUsed = new Uint8Array(this.#unknown.length);
    this.#state = model.init();
    this.#hash = model.hash(this.#state);
  }

  run(): KeyVerdict {
    const r = this.#search();
    const base = { key: this.key, ops: this.keyOps.length };
    if (r.valid === true) return { ...base, valid: true };
    if (r.valid === 'unknown') return { ...base, valid: 'unknown', reason: r.why };
    return { ...base, valid: false, reason: this.#reason(r.deadEnd), witness: witnessOf(r.deadEnd) };
  }

  #time(node: number): number {
    const op = this.#ok[node >> 1] as Op;
    return node & 1 ? (op.returnMs as number) : op.callMs;
  }

  /** Builds the event list: by time, a call before a return at the same time (closed intervals). */
  #link(): void {
    const nodes = Array.from({ length: this.#head }, (_, k) => k);
    nodes.sort((a, b) => this.#time(a) - this.#time(b) || (a & 1) - (b & 1) || a - b);
    let last = this.#head;
    for (const node of nodes) {
      this.#next[last] = node;
      this.#prev[node] = last;
      last = node;
    }
  }

  #search(): Outcome {
    const n = this.#ok.length;
    if (n === 0) return { valid: true };
    let cursor = this.#next[this.#head] as number;
    /** Trying unknown ops (`order`, from `pos`) after every ok candidate failed. */
    let order: number[] | undefined;
    let pos = 0;
    for (;;) {
      const stop = this.#outOfBudget();
      if (stop !== undefined) return { valid: 'unknown', why: stop };
      if (order === undefined) {
        if (cursor < 0) throw new Error('checker: the event list ran out before a return (bug)');
        if ((cursor & 1) === 0) { // a call: its op may go next
          if (this.#tryOk(cursor >> 1)) {
            if (this.#okDone === n) return { valid: true };
            cursor = this.#next[this.#head] as number;
          } else {
            cursor = this.#next[cursor] as number;
          }
          continue;
        }
        // The earliest pending return: its op had to be placed by now. Unknown ops invoked by then may go next.
        order = this.#unknownOrder(cursor >> 1);
        pos = 0;
      }
      let pushed = false;
      while (!pushed && pos < order.length) {
        const j = order[pos++] as number;
        pushed = this.#tryUnknown(j, order, pos);
      }
      if (pushed) {
        order = undefined;
        cursor = this.#next[this.#head] as number;
        continue;
      }
      // Every choice here failed: remember it and undo the last choice.
      this.#noteDeadEnd();
      const f = this.#pop();
      if (f === undefined) return { valid: false, deadEnd: this.#deadEnd as DeadEnd };
      if (f.kind === 'ok') {
        order = undefined;
        cursor = this.#next[2 * f.idx] as number;
      } else {
        order = f.order;
        pos = f.pos as number;
      }
    }
  }

  /**
   * The unknown ops that may go here (invoked by the earliest pending return, unused, changing the state),
   * one per effect key, those after which the stuck op `stuck` is legal first: usually the one that took effect.
   */
  #unknownOrder(stuck: number): number[] {
    const untilMs = this.#ok[stuck]?.returnMs as number;
    const helpful: number[] = [];
    const others: number[] = [];
    const effects = new Set<string>();
    for (let j = 0; j < this.#unknown.length && (this.#unknown[j] as Op).callMs <= untilMs; j++) {
      if (this.#unknownUsed[j]) continue;
      const effect = this.model.effectKey?.(this.#unknown[j] as Op) ?? `#${j}`;
      if (effects.has(effect)) continue; // interchangeable with one already in the list
      effects.add(effect);
      this.#steps++;
      const next = this.model.step(this.#state, this.#unknown[j] as Op);
      if (next === undefined || this.model.hash(next) === this.#hash) continue; // no effect: leaving it out is the same
      (this.model.step(next, this.#ok[stuck] as Op) === undefined ? others : helpful).push(j);
    }
    return helpful.concat(others);
  }

  #outOfBudget(): string | undefined {
    if (++this.#steps < this.#clockAtStep) return undefined;
    this.#clockAtStep = this.#steps + stepsPerClockRead;
    if (performance.now() > this.limits.deadlineMs) {
      return `budget of ${this.limits.budgetMs} ms exhausted after ${this.#steps} search steps on this key `
        + `(deepest point: ${this.#deadEnd?.okDone ?? 0} of ${this.#ok.length} ok ops linearized)`;
    }
    if (this.limits.memoLeft <= 0) return `memo limit reached (${this.#steps} search steps on this key): treat as budget exhausted`;
    return undefined;
  }

  #tryOk(i: number): boolean {
    const op = this.#ok[i] as Op;
    const next = this.model.step(this.#state, op);
    if (next === undefined) return false;
    const hash = this.model.hash(next);
    const frontier = this.#frontier;
    const maxDone = this.#maxDone;
    this.#mark(i);
    const key = `${this.#okKey()}|${hash}`;
    if (this.#isFailed(key, this.#used)) {
      this.#unmark(i, frontier, maxDone);
      return false;
    }
    this.#stack.push({ kind: 'ok', idx: i, state: this.#state, hash: this.#hash, frontier, maxDone, key });
    this.#state = next;
    this.#hash = hash;
    this.#lift(i);
    return true;
  }

  #tryUnknown(j: number, order: number[], pos: number): boolean {
    const next = this.model.step(this.#state, this.#unknown[j] as Op);
    if (next === undefined) return false;
    const hash = this.model.hash(next);
    const used = this.#used | (this.#unknownBit[j] as bigint);
    const key = `${this.#okKey()}|${hash}`;
    if (this.#isFailed(key, used)) return false;
    this.#stack.push({
      kind: 'unknown', idx: j, state: this.#state, hash: this.#hash, frontier: this.#frontier, maxDone: this.#maxDone, key, order, pos,
    });
    this.#unknownUsed[j] = 1;
    this.#used = used;
    this.#state = next;
    this.#hash = hash;
    return true;
  }

  /** Undoes the last choice after remembering that the configuration it led to failed. */
  #pop(): Frame<S> | undefined {
    const f = this.#stack.pop();
    if (f === undefined) return undefined;
    this.#addFailed(f.key, this.#used);
    this.#state = f.state;
    this.#hash = f.hash;
    if (f.kind === 'ok') {
      this.#unmark(f.idx, f.frontier, f.maxDone);
      this.#unlift(f.idx);
    } else {
      this.#unknownUsed[f.idx] = 0;
      this.#used &= ~(this.#unknownBit[f.idx] as bigint);
    }
    return f;
  }

  #mark(i: number): void {
    this.#done[i] = 1;
    this.#okDone++;
    if (i > this.#maxDone) this.#maxDone = i;
    while (this.#frontier < this.#ok.length && this.#done[this.#frontier]) this.#frontier++;
  }

  #unmark(i: number, frontier: number, maxDone: number): void {
    this.#done[i] = 0;
    this.#okDone--;
    this.#frontier = frontier;
    this.#maxDone = maxDone;
  }

  /**
   * The linearized ok set as text: the highest index and the holes below it. Holes are ops concurrent with
   * the highest one's call, so the text stays short (about the number of concurrent clients).
   */
  #okKey(): string {
    let s = `${this.#maxDone}:`;
    for (let k = this.#frontier; k < this.#maxDone; k++) if (!this.#done[k]) s += `${k},`;
    return s;
  }

  /** Failed when a failed configuration had the same ok set and state and used a subset of these unknown ops. */
  #isFailed(key: string, used: bigint): boolean {
    const sets = this.#failed.get(key);
    if (sets === undefined) return false;
    for (const v of sets) if ((v & used) === v) return true;
    return false;
  }

  #addFailed(key: string, used: bigint): void {
    const sets = this.#failed.get(key);
    if (sets === undefined) {
      this.#failed.set(key, [used]);
      this.limits.memoLeft--;
      return;
    }
    if (sets.some((v) => (v & used) === v)) return;
    const kept = sets.filter((w) => (w & used) !== used); // supersets of `used` add nothing
    this.limits.memoLeft -= 1 - (sets.length - kept.length);
    kept.push(used);
    this.#failed.set(key, kept);
  }

  /** Dancing links: take op i's call and return out of the list, and put them back in reverse order. */
  #lift(i: number): void {
    this.#unlink(2 * i);
    this.#unlink(2 * i + 1);
  }

  #unlift(i: number): void {
    this.#relink(2 * i + 1);
    this.#relink(2 * i);
  }

  #unlink(node: number): void {
    const p = this.#prev[node] as number;
    const nx = this.#next[node] as number;
    this.#next[p] = nx;
    if (nx >= 0) this.#prev[nx] = p;
  }

  #relink(node: number): void {
    const p = this.#prev[node] as number;
    const nx = this.#next[node] as number;
    this.#next[p] = node;
    if (nx >= 0) this.#prev[nx] = node;
  }

  #firstReturn(): number {
    let node = this.#next[this.#head] as number;
    while ((node & 1) === 0) node = this.#next[node] as number;
    return node;
  }

  /** Keeps the deepest dead end (most ok ops linearized) for the witness. */
  #noteDeadEnd(): void {
    if (this.#deadEnd !== undefined && this.#okDone <= this.#deadEnd.okDone) return;
    const ret = this.#firstReturn();
    const candidates: Op[] = [];
    for (let node = this.#next[this.#head] as number; node !== ret; node = this.#next[node] as number) {
      candidates.push(this.#ok[node >> 1] as Op);
    }
    const untilMs = this.#time(ret);
    const unknown = this.#unknown.filter((op, j) => !this.#unknownUsed[j] && op.callMs <= untilMs);
    candidates.push(...unknown.slice(-witnessUnknownOps));
    const recent = this.#stack.slice(-witnessHistoryOps)
      .map((f) => (f.kind === 'ok' ? this.#ok[f.idx] : this.#unknown[f.idx]) as Op);
    this.#deadEnd = { okDone: this.#okDone, stuck: this.#ok[ret >> 1] as Op, candidates, recent, stateHash: this.#hash };
  }

  #reason(d: DeadEnd): string {
    return `not linearizable (${this.model.name}): no order places ${formatOp(d.stuck)} before its return. `
      + `Deepest point: ${d.okDone} of ${this.#ok.length} ok ops linearized, state ${d.stateHash}; `
      + `last linearized: ${d.recent.map(formatOp).join('; ') || 'none'}; `
      + `could go next: ${d.candidates.map(formatOp).join('; ')}`;
  }
}

/** The dead end's ops, each once, by call time: the last ones placed, the candidates and the stuck op. */
function witnessOf(d: DeadEnd): Op[] {
  const byId = new Map<number, Op>();
  for (const op of [...d.recent, ...d.candidates, d.stuck]) byId.set(op.id, op);
  return [...byId.values()].sort((a, b) => a.callMs - b.callMs || a.id - b.id);
}
