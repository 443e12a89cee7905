/**
 * Histories for the linearizability checker: what a client invoked, when, and what it learned.
 *
 * An operation's outcome says what the client knows about its effect:
 * - `ok`: it took effect (or observed the object) exactly once, between `callMs` and `returnMs`, with `output`;
 * - `fail`: it is known NOT to have taken effect (a refusal before any write: 4xx validation, connection
 *   refused before sending). The checker drops it. Never use `fail` for a timeout or a reset connection.
 * - `unknown`: it may or may not have taken effect, at any time after `callMs` (a timeout, a reset, a crashed
 *   node). The checker never drops it and never assumes it returned.
 *
 * Times are `performance.now()` readings of ONE process: record every client of a history in the same
 * process (or translate times) so that real-time order between clients is meaningful.
 */

export type Outcome = 'ok' | 'fail' | 'unknown';

export interface Op {
  /** Unique within a history. */
  id: number;
  /** Client id. One process's ok/fail ops never overlap in time (the checker does not rely on it). */
  process: string;
  /** Independent object: histories are checked per key (P-compositionality). */
  key: string;
  /** Operation name understood by the model. */
  f: string;
  input: unknown;
  /** Present when outcome is 'ok'. */
  output?: unknown;
  outcome: Outcome;
  /** performance.now() at invocation. */
  callMs: number;
  /** performance.now() at the answer (ok/fail); absent for unknown (= +infinity; ignored if present). */
  returnMs?: number;
}

export interface OpHandle {
  /** The answer arrived: the op took effect (or observed) with `output`. */
  ok(output: unknown): void;
  /** Known NOT to have taken effect. */
  fail(): void;
  /** No answer we can trust (timeout, reset): may take effect at any time after the call. */
  unknown(): void;
}

const historyFormat = 1;

/**
 * Records ops as clients run them. Ops never settled count as 'unknown'. Inputs and outputs should be
 * JSON values so a history survives `toJSON`/`fromJSON` (save a failing history, re-check it later).
 */
export class HistoryRecorder {
  readonly #ops: Op[] = [];
  #nextId = 0;
  readonly #now: () => number;

  /** @param now clock in ms; @default performance.now (tests may pass a fake clock) */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /**
   * Starts an op now, or at `callMs` when it began earlier than it is recorded (an op the server may have
   * begun on its own, recorded once a client notices it); settle it exactly once through the handle.
   */
  invoke(process: string, key: string, f: string, input: unknown, callMs?: number): OpHandle {
    const op: Op = { id: this.#nextId++, process, key, f, input, outcome: 'unknown', callMs: Math.min(callMs ?? Infinity, this.#now()) };
    this.#ops.push(op);
    let settled = false;
    const settle = (): void => {
      if (settled) throw new Error(`history: op #${op.id} (${process} ${f}) settled twice`);
      settled = true;
    };
    return {
      ok: (output) => { settle(); op.outcome = 'ok'; op.output = output; op.returnMs = this.#now(); },
      fail: () => { settle(); op.outcome = 'fail'; op.returnMs = this.#now(); },
      unknown: () => { settle(); },
    };
  }

  /** A copy of every op so far, in invocation order; ops still open are 'unknown' (no returnMs). */
  ops(): Op[] {
    return this.#ops.map((op) => ({ ...op }));
  }

  toJSON(): unknown {
    return { format: historyFormat, ops: this.ops() };
  }

  static fromJSON(x: unknown): HistoryRecorder {
    const doc = (typeof x === 'string' ? JSON.parse(x) : x) as { format?: unknown; ops?: unknown };
    if (doc === null || typeof doc !== 'object' || doc.format !== historyFormat || !Array.isArray(doc.ops)) {
      throw new Error(`history: not a history document (format ${historyFormat} with an ops array)`);
    }
    const r = new HistoryRecorder();
    for (const raw of doc.ops) {
      const op = parseOp(raw);
      r.#ops.push(op);
      r.#nextId = Math.max(r.#nextId, op.id + 1);
    }
    return r;
  }
}

function parseOp(raw: unknown): Op {
  const o = raw as Record<string, unknown>;
  const bad = (what: string): never => { throw new Error(`history: bad op ${JSON.stringify(raw)}: ${what}`); };
  if (o === null || typeof o !== 'object') bad('not an object');
  if (typeof o.id !== 'number' || !Number.isInteger(o.id)) bad('id');
  if (typeof o.process !== 'string' || typeof o.key !== 'string' || typeof o.f !== 'string') bad('process/key/f');
  if (o.outcome !== 'ok' && o.outcome !== 'fail' && o.outcome !== 'unknown') bad('outcome');
  if (typeof o.callMs !== 'number') bad('callMs');
  if (o.returnMs !== undefined && typeof o.returnMs !== 'number') bad('returnMs');
  const op: Op = {
    id: o.id as number, process: o.process as string, key: o.key as string, f: o.f as string,
    input: o.input, outcome: o.outcome as Outcome, callMs: o.callMs as number,
  };
  if ('output' in o) op.output = o.output;
  if (o.returnMs !== undefined) op.returnMs = o.returnMs as number;
  return op;
}

/** One line for an op: `#12 c3 cas({"from":"a","to":"b"}) → true [10.000, 12.500]`. */
export function formatOp(op: Op): string {
  const result = op.outcome === 'ok' ? JSON.stringify(op.output) ?? 'undefined' : op.outcome;
  const end = op.outcome === 'unknown' || op.returnMs === undefined ? '∞' : op.returnMs.toFixed(3);
  return `#${op.id} ${op.process} ${op.f}(${JSON.stringify(op.input) ?? ''}) → ${result} [${op.callMs.toFixed(3)}, ${end}]`;
}
