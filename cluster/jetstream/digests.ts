/**
 * Whether the nodes read the same stream. A consumer reads the copy of the stream on the server that
 * hosts it, and copies have been seen to disagree (nats-server 2.9.10 after every server was SIGKILLed
 * at once: one copy held, at one sequence, a message the others did not). The divergence audit checks
 * a node's own commits and the messages it read last against the stream's leader; a message of another
 * node read from a wrong copy passes both. So each node also digests what it reads, per window of
 * `windowSeqs` sequences (the message ids, in order), and reports its newest window digests with its
 * progress; a node that hears another's digest for a window it read too, and finds it different, checks
 * each message of its own window against the stream's leader (the audit): the node whose reads the
 * leader does not hold stops with exit code 70, as on any divergence, and replays the stream on restart.
 *
 * A node digests only windows it read from their first sequence (a node that opened from a snapshot
 * starts at the next window); windows are aligned on sequence numbers, so every node's windows match.
 */
import { createHash, type Hash } from 'node:crypto';

/** Sequences per window: a window is compared once every node has read past its end. */
export const windowSeqs = 1024;
/** Completed windows kept (with the message ids, for the check against the leader). */
export const windowsKept = 8;
/** Window digests carried by a progress report (the newest first). */
export const windowsReported = 4;
/** Other nodes' window digests remembered, per node. */
const heardPerNodeMax = 32;

/** A completed window: its last sequence and digest (16 hex digits of SHA-256 over the ids in order). */
export interface WindowDigest { end: number; sha: string }

interface Window extends WindowDigest { reads: [number, string][] }

/** What a node does when its window differs from another node's. */
export interface DigestPorts {
  /** Checks the messages read against the stream's leader (the node diverges when one differs): true once checked, false when it could not ask. */
  verify(reads: readonly [number, string][]): Promise<boolean>;
  /** Told once per window and node on a mismatch, before the check. */
  mismatch(window: WindowDigest, node: string, theirs: string): void;
}

export class StreamDigests {
  /** The window being read: its end sequence, the hash so far and the ids read; undefined before the first full window starts. */
  private current: { end: number; hash: Hash; reads: [number, string][] } | undefined;
  private readonly done: Window[] = [];
  /** Other nodes' digests by node: window end → digest. */
  private readonly heard = new Map<string, Map<number, string>>();
  /** Windows already checked against the leader (or being checked): end → the check. */
  private readonly checks = new Map<number, Promise<boolean>>();

  /** Reading starts after `cursorSeq`: the first window digested is the first that begins after it. */
  constructor(private readonly ports: DigestPorts, private readonly cursorSeq: number, private readonly seqs = windowSeqs) {}

  /** A message read at `seq` (with its message id; '' for none), in stream order. */
  read(seq: number, msgID: string | undefined): void {
    const end = Math.ceil(seq / this.seqs) * this.seqs;
    if (this.current !== undefined && end > this.current.end) this.complete();
    if (this.current === undefined) {
      // Only a window this node reads from its first sequence: one begun before the cursor is partial here.
      if (end - this.seqs < this.cursorSeq) return;
      this.current = { end, hash: createHash('sha256'), reads: [] };
    }
    const id = msgID ?? '';
    this.current.hash.update(`${seq} ${id}\n`);
    if (id !== '') this.current.reads.push([seq, id]);
    if (seq === end) this.complete();
  }

  /** The newest completed windows, newest first (what a progress report carries). */
  latest(): WindowDigest[] {
    return this.done.slice(-windowsReported).reverse().map(({ end, sha }) => ({ end, sha }));
  }

  /** Another node's newest windows: each compared with this node's own, now or once it completes it. */
  heardFrom(node: string, windows: readonly WindowDigest[]): void {
    let mine = this.heard.get(node);
    if (mine === undefined) this.heard.set(node, (mine = new Map()));
    for (const w of windows) {
      if (mine.has(w.end)) continue;
      mine.set(w.end, w.sha);
      if (mine.size > heardPerNodeMax) mine.delete(mine.keys().next().value!);
      const own = this.done.find((d) => d.end === w.end);
      if (own !== undefined) this.compare(own, node, w.sha);
    }
  }

  private complete(): void {
    const c = this.current!;
    this.current = undefined;
    const window: Window = { end: c.end, sha: c.hash.digest('hex').slice(0, 16), reads: c.reads };
    this.done.push(window);
    if (this.done.length > windowsKept) this.done.shift();
    for (const [node, theirs] of this.heard) {
      const sha = theirs.get(window.end);
      if (sha !== undefined) this.compare(window, node, sha);
    }
  }

  /** A different digest: this node checks its own window against the leader, once per window. */
  private compare(own: Window, node: string, theirs: string): void {
    if (own.sha === theirs || this.checks.has(own.end)) return;
    this.ports.mismatch({ end: own.end, sha: own.sha }, node, theirs);
    const check = this.ports.verify(own.reads);
    this.checks.set(own.end, check);
    // A check that could not ask the leader may run again on the next report.
    void check.then((asked) => { if (!asked) this.checks.delete(own.end); }, () => this.checks.delete(own.end));
    if (this.checks.size > windowsKept * 4) this.checks.delete(this.checks.keys().next().value!);
  }
}
