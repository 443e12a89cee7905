/**
 * Whether this node can use a log it shares with other nodes, judged from the log's answers (a commit
 * acknowledged, a message delivered, the stream's leader answering a question). A node that gets none for
 * `unreachableAfterMs` cannot use the log: it is cut off from its servers, or they from the quorum. It can
 * again once answers have come for `backAfterMs` without a silence that long: a link that fails over and
 * over does not hand what it owns back and forth at each return (see docs/cluster.md). Pure: the caller
 * passes the time (an interval clock's ms) and looks as often as it likes.
 */

export interface ReachBounds {
  /** Silence after which the log counts as unreachable. */
  unreachableAfterMs: number;
  /** Answers without such a silence for this long make it reachable again. */
  backAfterMs: number;
}

export class LogReach {
  private reachable = true;
  private lastAnsweredMs: number;
  /** While unreachable: when the current run of answers began (undefined: none since the last silence). */
  private runSinceMs: number | undefined;

  constructor(private readonly bounds: ReachBounds, nowMs: number) {
    this.lastAnsweredMs = nowMs;
  }

  get isReachable(): boolean {
    return this.reachable;
  }

  /** The log answered at `nowMs`. */
  answered(nowMs: number): void {
    if (!this.reachable && (this.runSinceMs === undefined || nowMs - this.lastAnsweredMs >= this.bounds.unreachableAfterMs)) this.runSinceMs = nowMs;
    this.lastAnsweredMs = Math.max(this.lastAnsweredMs, nowMs);
  }

  /** Judges at `nowMs`: the new value when it changed, else undefined. */
  look(nowMs: number): boolean | undefined {
    const silentMs = nowMs - this.lastAnsweredMs;
    if (this.reachable) {
      if (silentMs < this.bounds.unreachableAfterMs) return undefined;
      this.reachable = false;
      this.runSinceMs = undefined;
      return false;
    }
    if (silentMs >= this.bounds.unreachableAfterMs) this.runSinceMs = undefined;
    if (this.runSinceMs === undefined || nowMs - this.runSinceMs < this.bounds.backAfterMs) return undefined;
    this.reachable = true;
    return true;
  }
}
