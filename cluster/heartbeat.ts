/**
 * The heartbeat on topic `roster/members/v1`: JSON, one per `heartbeatMs` per node. Fields are only
 * ever added; a reader ignores fields it does not know, and drops a message that lacks one it needs.
 */
export const membersTopic = 'roster/members/v1';

/** A heartbeat larger than this is dropped unread (a real one is a few hundred bytes). */
export const heartbeatBytesMax = 4096;
/** At most this many listen addresses travel in one heartbeat; more are cut. */
export const heartbeatAddrsMax = 16;

export interface Heartbeat {
  name: string;
  id: string;
  /** host:port of the node's HTTP API. */
  http: string;
  /** host:port of the node's gRPC health service. */
  grpc: string;
  /**
   * Incarnation: the wall-clock ms the node started. (inc, seq) orders one node's heartbeats across
   * restarts, so a late copy of an older heartbeat cannot undo a newer one.
   */
  inc: number;
  /** Counts up from 0 within one incarnation. */
  seq: number;
  /** The last heartbeat of a node that stops cleanly. */
  leaving?: boolean;
  /** The node's libp2p listen addresses without peer id, so the others can dial it back after a restart. */
  addrs?: string[];
  /** Force-leave told to this node: each receiver moves `name` to left if it has it failed (`prune`: forgets it). */
  forceLeave?: { name: string; prune: boolean };
  /** The command level of the sender's release (absent: level 1, a release before the field). */
  cl?: number;
  /**
   * The cluster the sender belongs to: the identity of the log it shares. A receiver
   * of another cluster drops the heartbeat (absent: a release before the field, taken as its own).
   */
  cluster?: string;
  /**
   * The sender cannot use the log (its nats-servers have not answered it for a while): the others do not
   * count it among the owners of timers until a heartbeat without the field (absent: it can).
   */
  logUnreachable?: true;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeHeartbeat(hb: Heartbeat): Uint8Array {
  return encoder.encode(JSON.stringify({ ...hb, addrs: hb.addrs?.slice(0, heartbeatAddrsMax) }));
}

/** The heartbeat in `data`, or a reason why it is not one. */
export function decodeHeartbeat(data: Uint8Array): Heartbeat | { invalid: string } {
  if (data.byteLength > heartbeatBytesMax) return { invalid: `larger than ${heartbeatBytesMax} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch {
    return { invalid: 'not JSON' };
  }
  if (typeof raw !== 'object' || raw === null) return { invalid: 'not an object' };
  const o = raw as Record<string, unknown>;
  for (const key of ['name', 'id', 'http', 'grpc'] as const) {
    if (typeof o[key] !== 'string') return { invalid: `${key} is not a string` };
  }
  for (const key of ['inc', 'seq'] as const) {
    if (!Number.isSafeInteger(o[key])) return { invalid: `${key} is not an integer` };
  }
  if (o.name === '') return { invalid: 'name is empty' };
  const addrs = Array.isArray(o.addrs)
    ? o.addrs.filter((a): a is string => typeof a === 'string').slice(0, heartbeatAddrsMax)
    : undefined;
  const hb: Heartbeat = {
    name: o.name as string, id: o.id as string, http: o.http as string, grpc: o.grpc as string,
    inc: o.inc as number, seq: o.seq as number,
  };
  if (o.leaving === true) hb.leaving = true;
  if (Number.isSafeInteger(o.cl) && (o.cl as number) >= 1) hb.cl = o.cl as number;
  if (addrs !== undefined) hb.addrs = addrs;
  if (typeof o.cluster === 'string' && o.cluster !== '') hb.cluster = o.cluster;
  if (o.logUnreachable === true) hb.logUnreachable = true;
  const forced = o.forceLeave as { name?: unknown; prune?: unknown } | undefined;
  if (typeof forced === 'object' && forced !== null && typeof forced.name === 'string' && forced.name !== '') {
    hb.forceLeave = { name: forced.name, prune: forced.prune === true };
  }
  return hb;
}

/**
 * Whether two cluster identities (`<stream>@<creation time>`) name one log. nats-server 2.9.10 answers
 * each of several creates racing milliseconds apart with that create's own time while the stream keeps
 * the first; the log reads the time until it settles (settledStream), but a node whose clock is far off
 * skips that, and a node of an older release kept its own. So times of one stream name within a second
 * of each other count as one log; a stream deleted and created again, or another cluster's, is created
 * seconds or more apart.
 */
export function sameCluster(a: string, b: string): boolean {
  if (a === b) return true;
  const [at, bt] = [a.lastIndexOf('@'), b.lastIndexOf('@')];
  if (at < 0 || bt < 0 || a.slice(0, at) !== b.slice(0, bt)) return false;
  const apart = Math.abs(Date.parse(a.slice(at + 1)) - Date.parse(b.slice(bt + 1)));
  return apart < sameStreamWithinMs;
}

const sameStreamWithinMs = 1000;
