/**
 * Observers: what the runtime, the logs and the HTTP front end report as they work, for metrics. Each
 * is optional where it is taken, and each call is made on a hot path: an implementation must only add
 * to counters it already holds (no allocation, no I/O, no label strings built per call).
 */
import type { Command } from '../domain/commands.ts';
import type { CheckKind, CheckStatus } from '../domain/types.ts';

/** A committed entry as an observer reads it (the log's `LogEntry`): its time and its command. */
export interface ObservedEntry {
  /** Entry time in ms since the epoch, stamped once before commit. */
  atMs: number;
  cmd: Command;
}

/** What apply made of one entry, as an observer reads it: its result and its effects (the runtime's `Applied`). */
export interface AppliedView {
  result: { ok: boolean; reason?: string };
  effects: readonly { t: string; key?: string; id?: string; node?: string; checkId?: string }[];
}

/** The runtime's view of the log: how long appends take to be acknowledged, how applying goes. */
export interface RuntimeObserver {
  /** One append (a proposal or a group of proposals made together) was acknowledged after `seconds`. */
  appended(seconds: number): void;
  /** One batch of `entries` committed entries was applied, effects included, in `seconds`. */
  applied(entries: number, seconds: number): void;
  /**
   * One committed entry was applied on this node (after the start's replay too); `local` when this node
   * proposed it, so that an event the whole cluster applies is counted once, where it was decided.
   */
  entryApplied?(entry: ObservedEntry, applied: AppliedView, local: boolean): void;
  /** A queued acquire (`?acquire=&wait=`) left its key's queue after `seconds` in it, with the lock or without. */
  lockQueued?(seconds: number, acquired: boolean): void;
  /** One probe of this agent's check ran for `seconds` and reported `status`. */
  checkRan?(kind: CheckKind, status: CheckStatus, seconds: number): void;
}

/** A log's own commits. */
export interface LogObserver {
  /**
   * One group commit of `entries` entries was made durable in `seconds`: the WAL's write and fdatasync,
   * or a JetStream publish until its PubAck (stored on a quorum).
   */
  committed(entries: number, seconds: number): void;
}

/** The HTTP front end: one call per answered request. */
export interface HttpObserver {
  /**
   * A request was answered. `route` is the pattern of the route that took it (`/v1/kv/*`), or
   * `unmatched`; it is one of a fixed set of strings, never the request's path. `seconds` runs from
   * arrival to answer; `queuedSeconds` is the part of it the request waited in a lock queue (0 for most).
   */
  request(method: string, route: string, status: number, seconds: number, queuedSeconds: number): void;
}
