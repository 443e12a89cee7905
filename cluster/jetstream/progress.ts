/**
 * Each Roster node's progress, shared over core NATS: every `progressReportMs` a node publishes
 * `{name, server, applied, from?, compacted?, sv?, dg?}` (its name, the nats server it is connected to, the last
 * index it applied, the mark it may still start from and the compaction point it knows, each mark as
 * `[seq, index]`, the server's version, and its newest window digests as `[end, sha]`, see digests.ts)
 * on `roster.progress.<stream>`, and every node keeps the newest report per name. Not stored in a
 * stream: a report is worth only its freshness, and a lost one is replaced a second later. The reader
 * of the table (/v1/operator/log) judges a report older than a few seconds as unknown.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { NodeProgress } from '../../src/ports/index.ts';
import { windowsReported, type WindowDigest } from './digests.ts';

/** How often a node reports its progress. */
export const progressReportMs = 1_000;
/** A report older than this is dropped from the table (the node stopped or left long ago). */
export const progressForgetMs = 60_000;
/** Most nodes kept in the table; reports from further names are ignored. */
export const progressNodesMax = 256;
/** A report larger than this is dropped unread (a real one is well under 200 bytes). */
const progressBytesMax = 1024;

/** The subject progress reports travel on for `stream` (outside the stream's own subject). */
export function progressSubject(stream: string): string {
  return `roster.progress.${stream}`;
}

/** A stream sequence and the index of the last command of the message there. */
export interface SeqIndex { seq: number; index: number }

/**
 * What the own node reports; the marks only once it knows them (see compaction.ts), and the version of
 * the nats-server it is connected to (compaction runs only when every one is known to purge safely).
 */
export interface OwnProgress {
  server: string; appliedIndex: number; startFrom?: SeqIndex; compacted?: SeqIndex; serverVersion?: string; digests?: WindowDigest[];
}

interface Heard extends OwnProgress { atMs: number }

/** A node's marks as last reported (its own first-hand), with the report's age. */
export interface NodeMarks {
  name: string; startFrom: SeqIndex | undefined; compacted: SeqIndex | undefined; serverVersion: string | undefined; ageMs: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A report's fields, or undefined when `data` is not one. */
export function decodeProgress(data: Uint8Array): ({ name: string } & OwnProgress) | undefined {
  if (data.byteLength > progressBytesMax) return undefined;
  try {
    const o = JSON.parse(decoder.decode(data)) as Record<string, unknown>;
    if (typeof o.name !== 'string' || o.name === '' || typeof o.server !== 'string' || !Number.isSafeInteger(o.applied)) return undefined;
    const out: { name: string } & OwnProgress = { name: o.name, server: o.server, appliedIndex: o.applied as number };
    const startFrom = seqIndexOf(o.from);
    const compacted = seqIndexOf(o.compacted);
    if (startFrom !== undefined) out.startFrom = startFrom;
    if (compacted !== undefined) out.compacted = compacted;
    if (typeof o.sv === 'string' && o.sv.length <= 64) out.serverVersion = o.sv;
    const digests = digestsOf(o.dg);
    if (digests !== undefined) out.digests = digests;
    return out;
  } catch {
    return undefined;
  }
}

/** A report's `[seq, index]` pair, or undefined when absent or malformed. */
function seqIndexOf(v: unknown): SeqIndex | undefined {
  if (!Array.isArray(v) || v.length !== 2 || !v.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return undefined;
  return { seq: v[0] as number, index: v[1] as number };
}

/** A report's `[[end, sha], ...]` window digests, or undefined when absent or malformed. */
function digestsOf(v: unknown): WindowDigest[] | undefined {
  if (!Array.isArray(v) || v.length > windowsReported) return undefined;
  const out: WindowDigest[] = [];
  for (const d of v) {
    if (!Array.isArray(d) || d.length !== 2 || !Number.isSafeInteger(d[0]) || (d[0] as number) < 1) return undefined;
    if (typeof d[1] !== 'string' || !/^[0-9a-f]{16}$/.test(d[1])) return undefined;
    out.push({ end: d[0] as number, sha: d[1] });
  }
  return out;
}

/** The report's JSON; a mark not known yet is left out. */
export function encodeProgress(name: string, p: OwnProgress): Uint8Array {
  const pair = (m: SeqIndex | undefined): [number, number] | undefined => (m === undefined ? undefined : [m.seq, m.index]);
  return encoder.encode(JSON.stringify({
    name, server: p.server, applied: p.appliedIndex, from: pair(p.startFrom), compacted: pair(p.compacted), sv: p.serverVersion || undefined,
    dg: p.digests === undefined || p.digests.length === 0 ? undefined : p.digests.map((d) => [d.end, d.sha]),
  }));
}

export class ProgressBoard {
  private readonly heard = new Map<string, Heard>();
  private timer: NodeJS.Timeout | undefined;
  private sub: Subscription | undefined;

  /** `digestsHeard` is told every other node's reported window digests. */
  constructor(
    private readonly nodeName: string, private readonly own: () => OwnProgress,
    private readonly digestsHeard?: (node: string, digests: readonly WindowDigest[]) => void,
  ) {}

  /** Subscribes to the others' reports and reports this node's every `progressReportMs` until stop(). */
  start(nc: NatsConnection, subject: string): void {
    this.sub = nc.subscribe(subject, { callback: (err, msg) => { if (err === null) this.record(msg.data); } });
    const report = (): void => {
      try {
        nc.publish(subject, encodeProgress(this.nodeName, this.own()));
      } catch {
        // A closed or draining connection: the log is stopping; nothing to report.
      }
    };
    report();
    this.timer = setInterval(report, progressReportMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.sub?.unsubscribe();
  }

  /** Every node heard from in the last `progressForgetMs`, this node first-hand, sorted by name. */
  nodes(nowMs = performance.now()): NodeProgress[] {
    const { server, appliedIndex, digests } = this.own();
    const out: NodeProgress[] = [withWindow({ name: this.nodeName, server, appliedIndex, ageMs: 0 }, digests)];
    for (const [name, h] of this.live(nowMs)) {
      out.push(withWindow({ name, server: h.server, appliedIndex: h.appliedIndex, ageMs: Math.max(0, nowMs - h.atMs) }, h.digests));
    }
    return out.sort(byName);
  }

  /** The marks of every node heard from in the last `progressForgetMs`, this node first-hand, sorted by name. */
  marks(nowMs = performance.now()): NodeMarks[] {
    const { startFrom, compacted, serverVersion } = this.own();
    const out: NodeMarks[] = [{ name: this.nodeName, startFrom, compacted, serverVersion, ageMs: 0 }];
    for (const [name, h] of this.live(nowMs)) {
      out.push({ name, startFrom: h.startFrom, compacted: h.compacted, serverVersion: h.serverVersion, ageMs: Math.max(0, nowMs - h.atMs) });
    }
    return out.sort(byName);
  }

  /** The other nodes heard from in the last `progressForgetMs`; older reports are forgotten. */
  private live(nowMs: number): [string, Heard][] {
    const out: [string, Heard][] = [];
    for (const [name, h] of this.heard) {
      if (name === this.nodeName) continue;
      if (nowMs - h.atMs > progressForgetMs) this.heard.delete(name);
      else out.push([name, h]);
    }
    return out;
  }

  private record(data: Uint8Array): void {
    const p = decodeProgress(data);
    if (p === undefined || (!this.heard.has(p.name) && this.heard.size >= progressNodesMax)) return;
    const { name, ...heard } = p;
    this.heard.set(name, { ...heard, atMs: performance.now() });
    if (name !== this.nodeName && p.digests !== undefined) this.digestsHeard?.(name, p.digests);
  }
}

/** The row with the newest of the node's window digests, when it reported one. */
function withWindow(row: NodeProgress, digests: WindowDigest[] | undefined): NodeProgress {
  const newest = digests?.[0];
  if (newest !== undefined) row.window = newest;
  return row;
}

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
