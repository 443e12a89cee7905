/**
 * Observers: what the runtime, the logs and the HTTP front end report as they work, for metrics. Each
 * is optional where it is taken, and each call is made on a hot path: an implementation must only add
 * to counters it already holds (no allocation, no I/O, no label strings built per call).
 */

/** The runtime's view of the log: how long appends take to be acknowledged, how applying goes. */
export interface RuntimeObserver {
  /** One append (a proposal or a group of proposals made together) was acknowledged after `seconds`. */
  appended(seconds: number): void;
  /** One batch of `entries` committed entries was applied, effects included, in `seconds`. */
  applied(entries: number, seconds: number): void;
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
   * `unmatched`; it is one of a fixed set of strings, never the request's path.
   */
  request(method: string, route: string, status: number, seconds: number): void;
}
