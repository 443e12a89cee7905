/**
 * The stream's options, and what a connection is made of: its subscriptions, the views they read, what
 * waits for its socket, and the close codes of watch.md §4.
 */
import type * as Uws from 'uWebSockets.js';
import type { Identity } from '../auth/index.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { SnapshotCursor, TopicView } from './stream-views.ts';
import type { LongTimer } from '../util/timer.ts';

export const streamSubprotocol = 'registry.stream.v1';

export interface StreamOptions {
  /** A bookmark after this much silence on a connection. @default 30 s */
  bookmarkIntervalMs?: number;
  /** Above this many bytes buffered in uWS, events are held and coalesced and snapshot pages wait. @default 1 MiB */
  bufferedBytesSoft?: number;
  /**
   * A connection's queue budget: bytes of events and messages waiting for its socket (in uWS, held and
   * queued here; snapshot pages in flight are the agent's budget below) past which it is closed with 4008.
   * @default 4 MiB
   */
  bufferedBytesHard?: number;
  /** Held events (distinct items) beyond which the reader is closed with 4008. @default 10000 */
  pendingItemsMax?: number;
  /** @default 64 */
  subscriptionsMax?: number;
  /**
   * How long a view outlives its last subscriber, kept up to date, so a client that subscribes again
   * (a reconnect, a resubscribe) does not pay for building it anew. @default 10 s
   */
  viewIdleMs?: number;
  /** Views kept without subscribers; past it the one left longest ago goes. @default 256 */
  idleViewsMax?: number;
  /** Approximate size of one snapshot frame's items. @default 64 KiB */
  snapshotFrameBytes?: number;
  /**
   * Snapshot pages written to sockets and not yet drained, over all connections, past which further
   * pages wait (each snapshotting connection may still have one page in flight). @default 64 MiB
   */
  snapshotBytesMax?: number;
  /** Open stream connections per client (token subject, else address); more are refused 429. @default 64 */
  connectionsPerClientMax?: number;
  /** Open stream connections of the agent; more are refused 503. @default 256 */
  connectionsMax?: number;
  /** Largest client message; a larger one closes the connection with 1009. @default 16 KiB */
  messageBytesMax?: number;
  /** Authentication of the upgrade (absent: the stream is open, as the HTTP API is without auth). */
  auth?: StreamAuth;
  /**
   * The HTTP API's rate limiter: each upgrade attempt and each `subscribe` counts as one request, against
   * the token's subject once it verified, else the client address. Absent: the stream is not rate-limited.
   */
  rateLimit?: RateLimiter;
}

/** Who opens a stream: the identity of a bearer token from a header, `?token=` or a `bearer.` subprotocol. */
export interface StreamAuth {
  bearer(headers: Map<string, string>, query: URLSearchParams, subprotocolToken?: string): Promise<Identity>;
}

/** The options with their defaults applied. */
export type StreamSettings = Required<Omit<StreamOptions, 'auth' | 'rateLimit'>> & Pick<StreamOptions, 'auth' | 'rateLimit'>;

export function streamSettings(options: StreamOptions): StreamSettings {
  return {
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 30_000,
    bufferedBytesSoft: options.bufferedBytesSoft ?? 1024 * 1024,
    bufferedBytesHard: options.bufferedBytesHard ?? 4 * 1024 * 1024,
    pendingItemsMax: options.pendingItemsMax ?? 10_000,
    subscriptionsMax: options.subscriptionsMax ?? 64,
    viewIdleMs: options.viewIdleMs ?? 10_000,
    idleViewsMax: options.idleViewsMax ?? 256,
    snapshotFrameBytes: options.snapshotFrameBytes ?? 64 * 1024,
    snapshotBytesMax: options.snapshotBytesMax ?? 64 * 1024 * 1024,
    connectionsPerClientMax: options.connectionsPerClientMax ?? 64,
    connectionsMax: options.connectionsMax ?? 256,
    messageBytesMax: Math.min(options.messageBytesMax ?? 16 * 1024, nativePayloadBytesMax),
    auth: options.auth,
    rateLimit: options.rateLimit,
  };
}

export interface Sub {
  id: string;
  conn: Conn;
  view: View;
  /** Its snapshot while it waits in the outbox (undefined once written). */
  snapshot: SnapshotJob | undefined;
}

export interface View {
  id: string;
  topic: TopicView;
  /** What subscribers were last sent of each item, for a topic tracking fingerprints (see stream-views.ts). */
  fingerprints: Map<string, string> | undefined;
  subs: Set<Sub>;
  /** The registry index from which `recent` holds every event the view's subscribers were sent (see Views.replay). */
  since: number;
  /** The items an event was sent about, in the order of their last event (the oldest first). */
  recent: Map<string, Recent>;
}

/** What a view's subscribers were sent about one item: the index of the last event, and when it entered or left the view. */
export interface Recent {
  at: number;
  /** Indexes (above the change ring's floor) at which the item entered or left the view, oldest first. */
  moves: number[] | undefined;
}

/**
 * A snapshot being written: the cursor reads its next page when the socket and the budget allow.
 * Undefined once its subscription is gone: the job is skipped when it reaches the head of the outbox
 * (so an unsubscribe never searches the outbox).
 */
export interface SnapshotJob {
  sub: Sub;
  cursor: SnapshotCursor | undefined;
  index: number;
}

/** What waits for a socket, in order: a message, or the rest of a snapshot. */
export type Task = { text: string } | { job: SnapshotJob };

export interface PendingEvent {
  key: string;
  /** undefined: delete */
  value: string | undefined;
  index: number;
}

export interface Conn {
  ws: Uws.WebSocket<ConnData>;
  subs: Map<string, Sub>;
  /** Messages and snapshots that must go out in order once the socket drains. */
  outbox: Queue<Task>;
  /** Characters of the messages in the outbox. */
  outboxBytes: number;
  /** Snapshot bytes written to the socket that may still be buffered (an upper bound). */
  snapshotInFlight: number;
  /**
   * Live events held for a slow reader: by subscription id, the newest state per item (so dropping a
   * subscription's costs only its own); how many items that is, and their size.
   */
  pending: Map<string, Map<string, PendingEvent>>;
  pendingItems: number;
  pendingBytes: number;
  /** When a message was last written (the interval clock, intervalMs()): an idle connection gets a bookmark. */
  lastSentMs: number;
  /** Nothing more is written or queued: the socket is closed or ended, or waits to drain before its close (`closing`). */
  closed: boolean;
  /** A close whose frame waits until uWS has written out what it buffers for the socket (see Outflow.slowConsumer), since `sinceMs` (interval clock). */
  closing: { code: number; reason: string; sinceMs: number } | undefined;
  /** Whose connection this is, for the per-client cap. */
  client: string;
  /** Who its subscribes are counted against in the rate limiter (the upgrade's caller). */
  caller: string;
  identity: Identity | undefined;
  /** Ends the connection with 4001 when the token expires. */
  expiry: LongTimer | undefined;
}

export interface ConnData {
  conn?: Conn;
  client: string;
  caller: string;
  identity: Identity | undefined;
}

export type Out = { op: 'upsert' | 'delete'; key: string; value: string | undefined };

export const closeCodes = { normal: 1000, goingAway: 1001, unsupportedData: 1003, policy: 1008, tooBig: 1009, internal: 1011, tokenExpired: 4001, slowConsumer: 4008 } as const;

/** uWS cuts (1006, no close frame) an inbound message above this; up to it a message over the protocol's limit gets 1009. */
export const nativePayloadBytesMax = 64 * 1024;

/** The subprotocol prefix that carries a bearer token for browsers (watch.md §4.1). */
export const bearerSubprotocol = 'bearer.';

/**
 * How long a close waits for the socket to drain before its frame is queued behind what is still buffered
 * (uWS then gives the reader the ping timeout, 16 s at an idleTimeout of 60, to take it all).
 */
export const closeDrainWaitMsMax = 30_000;

/** Ends a connection with a close code, once (a close waiting for the socket to drain is ended now). */
export function endConn(conn: Conn, code: number, reason: string): void {
  if (conn.closed && conn.closing === undefined) return;
  conn.closed = true;
  conn.closing = undefined;
  conn.ws.end(code, reason);
}

/**
 * A first-in first-out queue whose shift costs O(1) however long it is (an array's shift copies the rest
 * once the array is large): the items and the position of the head, cut off once half is consumed.
 */
export class Queue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) this.clear();
    else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
