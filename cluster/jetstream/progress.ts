/**
 * Each Roster node's progress, shared over core NATS: every `progressReportMs` a node publishes
 * `{name, server, applied}` (its name, the nats server it is connected to, the last index it applied)
 * on `roster.progress.<stream>`, and every node keeps the newest report per name. Not stored in a
 * stream: a report is worth only its freshness, and a lost one is replaced a second later. The reader
 * of the table (/v1/operator/log) judges a report older than a few seconds as unknown.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { NodeProgress } from '../../src/ports/index.ts';

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

/** What the own node reports. */
export interface OwnProgress { server: string; appliedIndex: number }

interface Heard { server: string; appliedIndex: number; atMs: number }

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A report's fields, or undefined when `data` is not one. */
export function decodeProgress(data: Uint8Array): ({ name: string } & OwnProgress) | undefined {
  if (data.byteLength > progressBytesMax) return undefined;
  try {
    const o = JSON.parse(decoder.decode(data)) as Record<string, unknown>;
    if (typeof o.name !== 'string' || o.name === '' || typeof o.server !== 'string' || !Number.isSafeInteger(o.applied)) return undefined;
    return { name: o.name, server: o.server, appliedIndex: o.applied as number };
  } catch {
    return undefined;
  }
}

export class ProgressBoard {
  private readonly heard = new Map<string, Heard>();
  private timer: NodeJS.Timeout | undefined;
  private sub: Subscription | undefined;

  constructor(private readonly nodeName: string, private readonly own: () => OwnProgress) {}

  /** Subscribes to the others' reports and reports this node's every `progressReportMs` until stop(). */
  start(nc: NatsConnection, subject: string): void {
    this.sub = nc.subscribe(subject, { callback: (err, msg) => { if (err === null) this.record(msg.data); } });
    const report = (): void => {
      const { server, appliedIndex } = this.own();
      try {
        nc.publish(subject, encoder.encode(JSON.stringify({ name: this.nodeName, server, applied: appliedIndex })));
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
  nodes(nowMs = Date.now()): NodeProgress[] {
    const out: NodeProgress[] = [{ name: this.nodeName, ...this.own(), ageMs: 0 }];
    for (const [name, h] of this.heard) {
      if (name === this.nodeName) continue;
      if (nowMs - h.atMs > progressForgetMs) this.heard.delete(name);
      else out.push({ name, server: h.server, appliedIndex: h.appliedIndex, ageMs: Math.max(0, nowMs - h.atMs) });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private record(data: Uint8Array): void {
    const p = decodeProgress(data);
    if (p === undefined || (!this.heard.has(p.name) && this.heard.size >= progressNodesMax)) return;
    this.heard.set(p.name, { server: p.server, appliedIndex: p.appliedIndex, atMs: Date.now() });
  }
}
