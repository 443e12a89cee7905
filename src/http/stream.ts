/**
 * `GET /v1/stream`: the WebSocket subscription protocol of watch.md §4 on the uWS app. A client
 * subscribes to a topic and key; it gets a snapshot then live events stamped with the registry index,
 * or, resuming from an index this node still holds, only what changed since (else `reset` + snapshot).
 * Events are computed once per view for each applied entry and fanned out to the view's subscribers;
 * several changes at one index travel as one `batch`.
 *
 * Memory is bounded by budgets, never by the reader's goodwill: a snapshot is read from state a page
 * at a time, only while the socket is below the soft limit and the agent's snapshot pages in flight are
 * within their budget, so a reader that stops reading costs one page, not its prefix. A slow reader's
 * live events are coalesced per item (newest wins — events carry full state) and flushed as one batch on
 * drain; a connection whose queued bytes (events and messages waiting in uWS and here) pass the hard
 * limit is closed with 4008. Nothing is ever silently dropped.
 */
import { createHash, randomUUID } from 'node:crypto';
import type * as Uws from 'uWebSockets.js';
import { allowed, allowedPrefix, type AccessRequest, type Identity } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Change } from '../runtime/index.ts';
import type { ApiContext } from './api.ts';
import { addressCaller, addressKey, Admission, tokenCaller, type RateLimiter } from './rate-limit.ts';
import { renderError, statusLine, type Wire } from './render.ts';
import { makeView, type SnapshotCursor, type TopicView, type ViewFilter } from './stream-views.ts';

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
   * The HTTP API's rate limiter: each upgrade attempt counts as one request, against the token's subject
   * once it verified, else the client address. Absent: upgrades are not rate-limited.
   */
  rateLimit?: RateLimiter;
}

/** Who opens a stream: the identity of a bearer token from a header, `?token=` or a `bearer.` subprotocol. */
export interface StreamAuth {
  bearer(headers: Map<string, string>, query: URLSearchParams, subprotocolToken?: string): Promise<Identity>;
}

interface Sub {
  id: string;
  conn: Conn;
  view: View;
}

interface View {
  id: string;
  topic: TopicView;
  /** What subscribers were last sent of each item, per the topic's tracking (see stream-views.ts). */
  fingerprints: Map<string, string> | undefined;
  members: Set<string> | undefined;
  subs: Set<Sub>;
}

/** A snapshot being written: the cursor reads its next page when the socket and the budget allow. */
interface SnapshotJob {
  sub: Sub;
  cursor: SnapshotCursor;
  index: number;
}

/** What waits for a socket, in order: a message, or the rest of a snapshot. */
type Task = { text: string } | { job: SnapshotJob };

interface PendingEvent {
  subId: string;
  key: string;
  /** undefined: delete */
  value: string | undefined;
  index: number;
}

interface Conn {
  ws: Uws.WebSocket<ConnData>;
  subs: Map<string, Sub>;
  /** Messages and snapshots that must go out in order once the socket drains. */
  outbox: Task[];
  /** Characters of the messages in the outbox. */
  outboxBytes: number;
  /** Snapshot bytes written to the socket that may still be buffered (an upper bound). */
  snapshotInFlight: number;
  /** Live events held for a slow reader, newest state per item, and their size. */
  pending: Map<string, PendingEvent>;
  pendingBytes: number;
  lastSentMs: number;
  closed: boolean;
  /** Whose connection this is, for the per-client cap. */
  client: string;
  identity: Identity | undefined;
  /** Ends the connection with 4001 when the token expires. */
  expiry: NodeJS.Timeout | undefined;
}

interface ConnData {
  conn?: Conn;
  client: string;
  identity: Identity | undefined;
}

type Out = { op: 'upsert' | 'delete'; key: string; value: string | undefined };

const closeCodes = { normal: 1000, goingAway: 1001, unsupportedData: 1003, policy: 1008, tooBig: 1009, internal: 1011, tokenExpired: 4001, slowConsumer: 4008 } as const;

/** uWS cuts (1006, no close frame) an inbound message above this; up to it a message over the protocol's limit gets 1009. */
const nativePayloadBytesMax = 64 * 1024;

/** The subprotocol prefix that carries a bearer token for browsers (watch.md §4.1). */
const bearerSubprotocol = 'bearer.';

export class StreamServer {
  readonly epoch = randomUUID().slice(0, 8);
  private readonly views = new Map<string, View>();
  private readonly conns = new Set<Conn>();
  private readonly perClient = new Map<string, number>();
  /** Snapshot bytes in flight over all connections (the sum of their upper bounds). */
  private snapshotInFlight = 0;
  /** Connections whose snapshot waits for the agent's snapshot budget. */
  private readonly waiting = new Set<Conn>();
  private readonly o: Required<Omit<StreamOptions, 'auth' | 'rateLimit'>> & Pick<StreamOptions, 'auth' | 'rateLimit'>;
  private readonly unsubscribeChanges: () => void;
  private readonly bookmarkTimer: NodeJS.Timeout;

  constructor(private readonly api: ApiContext, options: StreamOptions = {}) {
    this.o = {
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 30_000,
      bufferedBytesSoft: options.bufferedBytesSoft ?? 1024 * 1024,
      bufferedBytesHard: options.bufferedBytesHard ?? 4 * 1024 * 1024,
      pendingItemsMax: options.pendingItemsMax ?? 10_000,
      subscriptionsMax: options.subscriptionsMax ?? 64,
      snapshotFrameBytes: options.snapshotFrameBytes ?? 64 * 1024,
      snapshotBytesMax: options.snapshotBytesMax ?? 64 * 1024 * 1024,
      connectionsPerClientMax: options.connectionsPerClientMax ?? 64,
      connectionsMax: options.connectionsMax ?? 256,
      messageBytesMax: Math.min(options.messageBytesMax ?? 16 * 1024, nativePayloadBytesMax),
      auth: options.auth,
      rateLimit: options.rateLimit,
    };
    this.unsubscribeChanges = api.runtime.changes.subscribe((change) => this.onChange(change));
    // Bookmarks, and snapshots waiting for the agent's budget when no drain came to wake them.
    this.bookmarkTimer = setInterval(() => { this.bookmarks(); this.wakeWaiting(); }, Math.max(100, Math.min(1000, this.o.bookmarkIntervalMs / 4)));
    this.bookmarkTimer.unref();
  }

  /** The uWS behaviour for `app.ws('/v1/stream', ...)`. */
  behavior(): Uws.WebSocketBehavior<ConnData> {
    return {
      // uWS itself cuts a larger message without a close frame; up to it, messageBytesMax gives 1009.
      maxPayloadLength: nativePayloadBytesMax,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      // A safety net only: writes stop at the soft limit, and one message (a page, an event with a 512 KiB
      // value as base64, a flushed batch within the hard limit) stays below this.
      maxBackpressure: 2 * (this.o.bufferedBytesSoft + this.o.bufferedBytesHard + this.o.snapshotFrameBytes) + 2 * 1024 * 1024,
      closeOnBackpressureLimit: 1, // typed as a number in this build; any non-zero value turns it on
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.open(ws),
      message: (ws, message, isBinary) => this.message(ws, message, isBinary),
      drain: (ws) => this.drain(ws.getUserData().conn),
      close: (ws) => this.close(ws.getUserData().conn),
    };
  }

  get connections(): number {
    return this.conns.size;
  }

  /** Subscriptions over all open connections (read at metrics scrapes: one pass over the connections). */
  get subscriptions(): number {
    let n = 0;
    for (const conn of this.conns) n += conn.subs.size;
    return n;
  }

  /** Shutdown: every connection gets 1001 before the app closes its sockets. */
  closeAll(): void {
    clearInterval(this.bookmarkTimer);
    this.unsubscribeChanges();
    for (const conn of [...this.conns]) this.end(conn, closeCodes.goingAway, 'server shutting down');
  }

  // ---------------------------------------------------------------- connection life

  /**
   * The upgrade (watch.md §4.1): the subprotocol must be ours when any is offered; with authentication
   * on, a valid token (Authorization, X-Consul-Token, `?token=` or a `bearer.<base64url>` subprotocol)
   * or 401; then the per-client cap or 429. Each attempt counts once against the rate limit, as an HTTP
   * request does: against the token's subject once it verified, else (no auth, a refusal before or by
   * authentication) the address; past it the answer is 429 with Retry-After instead, before any upgrade.
   * Refusals are answered in the dialect's error format.
   */
  private upgrade(res: Uws.HttpResponse, req: Uws.HttpRequest, context: Uws.us_socket_context_t): void {
    const key = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const protocols = req.getHeader('sec-websocket-protocol').split(',').map((p) => p.trim()).filter((p) => p !== '');
    const headers = new Map<string, string>();
    req.forEach((k, v) => headers.set(k, v));
    const query = new URLSearchParams(req.getQuery() ?? '');
    const remote = Buffer.from(res.getRemoteAddressAsText()).toString();
    const byAddress = addressCaller(addressKey(res.getRemoteAddress()));
    // Counted once per attempt, against the first caller named, as an HTTP request is.
    const admission = new Admission(this.o.rateLimit, this.api.dialect);
    const limited = (caller: string): Wire | undefined => {
      const over = admission.admit(caller);
      return over === undefined ? undefined : withHeaders(over, admission.headers);
    };
    // Every refusal carries the rate headers, as every HTTP answer does.
    const refuseUpgrade = (err: RegistryError) =>
      this.reject(res, withHeaders(renderError(err, this.api.dialect), admission.headers));
    // Without authentication there is no identity to wait for: the address counts at once.
    const early = this.o.auth === undefined ? limited(byAddress) : undefined;
    if (early !== undefined) {
      this.reject(res, early);
      return;
    }
    if (protocols.length > 0 && !protocols.includes(streamSubprotocol)) {
      const over = limited(byAddress);
      if (over !== undefined) {
        this.reject(res, over);
        return;
      }
      refuseUpgrade(new RegistryError('streamSubprotocolUnsupported', { use: streamSubprotocol, offered: protocols.filter((p) => !p.startsWith(bearerSubprotocol)) }));
      return;
    }
    // `corked` wraps writes made after an await (uWS wants them corked); the upgrade itself is not wrapped.
    const accept = (identity: Identity | undefined, corked: (write: () => void) => void) => {
      const client = identity !== undefined ? `token:${identity.subject}` : `address:${remote}`;
      const over = identity !== undefined ? limited(tokenCaller(identity.subject)) : undefined;
      if (over !== undefined) {
        corked(() => this.reject(res, over));
        return;
      }
      if (identity !== undefined && !mayOpen(identity)) {
        corked(() => refuseUpgrade(new RegistryError('streamForbidden', { resources: streamResources })));
        return;
      }
      if (this.conns.size >= this.o.connectionsMax) {
        corked(() => refuseUpgrade(new RegistryError('streamConnectionsFull', { max: this.o.connectionsMax })));
        return;
      }
      if ((this.perClient.get(client) ?? 0) >= this.o.connectionsPerClientMax) {
        corked(() => refuseUpgrade(new RegistryError('streamClientConnectionsFull', { max: this.o.connectionsPerClientMax })));
        return;
      }
      // Echo only our protocol, never the token (watch.md §4.1).
      res.upgrade<ConnData>({ client, identity }, key, protocols.length > 0 ? streamSubprotocol : '', extensions, context);
    };
    if (this.o.auth === undefined) {
      accept(undefined, (write) => write());
      return;
    }
    const carried = protocols.find((p) => p.startsWith(bearerSubprotocol));
    const subprotocolToken = carried === undefined ? undefined : Buffer.from(carried.slice(bearerSubprotocol.length), 'base64url').toString('utf8');
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    this.o.auth.bearer(headers, query, subprotocolToken).then(
      // Not inside cork(): uWebSockets.js 20.x now and then closes (1006) a socket upgraded after an await
      // within cork() right after its open (uNetworking/uWebSockets issue 1928, fixed upstream by PR 1929;
      // seen here in about 1 of 15 authenticated connections, never without auth).
      (identity) => { if (!aborted) accept(identity, (write) => res.cork(write)); },
      (err: unknown) => {
        if (aborted) return;
        const refusal = err instanceof RegistryError ? err : new RegistryError('authenticationFailed');
        const over = limited(byAddress);
        res.cork(() => (over !== undefined ? this.reject(res, over) : refuseUpgrade(refusal)));
      },
    );
  }

  private reject(res: Uws.HttpResponse, w: Wire): void {
    res.writeStatus(statusLine(w.status));
    for (const [k, v] of w.headers) res.writeHeader(k, v);
    res.end(w.body);
  }

  private open(ws: Uws.WebSocket<ConnData>): void {
    const { client, identity } = ws.getUserData();
    const conn: Conn = {
      ws, subs: new Map(), outbox: [], outboxBytes: 0, snapshotInFlight: 0, pending: new Map(), pendingBytes: 0, lastSentMs: Date.now(), closed: false,
      client, identity, expiry: undefined,
    };
    ws.getUserData().conn = conn;
    this.conns.add(conn);
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    if (identity?.expiresAtMs !== undefined) {
      // setTimeout holds at most about 24.8 days; a later expiry is looked at again then.
      const arm = () => {
        const left = identity.expiresAtMs! - Date.now();
        conn.expiry = left <= 0
          ? undefined
          : setTimeout(arm, Math.min(left, 2 ** 31 - 1));
        conn.expiry?.unref();
        if (left <= 0) this.end(conn, closeCodes.tokenExpired, 'token expired');
      };
      arm();
    }
  }

  private close(conn: Conn | undefined): void {
    if (conn === undefined) return;
    conn.closed = true;
    clearTimeout(conn.expiry);
    const left = (this.perClient.get(conn.client) ?? 1) - 1;
    if (left <= 0) this.perClient.delete(conn.client);
    else this.perClient.set(conn.client, left);
    for (const sub of conn.subs.values()) this.leave(sub);
    conn.subs.clear();
    conn.pending.clear();
    conn.pendingBytes = 0;
    conn.outbox.length = 0;
    conn.outboxBytes = 0;
    this.conns.delete(conn);
    this.waiting.delete(conn);
    // What uWS still buffers for it goes with the socket.
    this.snapshotInFlight -= conn.snapshotInFlight;
    conn.snapshotInFlight = 0;
    this.wakeWaiting();
  }

  private end(conn: Conn, code: number, reason: string): void {
    if (conn.closed) return;
    conn.closed = true;
    conn.ws.end(code, reason);
  }

  // ---------------------------------------------------------------- client messages

  /** uWS has checked a text message's UTF-8 (it cuts the connection on invalid UTF-8 before this). */
  private message(ws: Uws.WebSocket<ConnData>, message: ArrayBuffer, isBinary: boolean): void {
    const conn = ws.getUserData().conn;
    if (conn === undefined || conn.closed) return;
    if (message.byteLength > this.o.messageBytesMax) {
      this.end(conn, closeCodes.tooBig, `message too big: at most ${this.o.messageBytesMax} bytes`);
      return;
    }
    if (isBinary) {
      this.end(conn, closeCodes.unsupportedData, 'messages must be JSON text frames');
      return;
    }
    const text = Buffer.from(message).toString('utf8');
    let msg: Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      msg = parsed as Record<string, unknown>;
    } catch {
      this.end(conn, closeCodes.policy, 'messages must be JSON objects');
      return;
    }
    if (msg.op === 'subscribe') this.subscribe(conn, msg);
    else if (msg.op === 'unsubscribe') this.unsubscribe(conn, msg);
    else this.end(conn, closeCodes.policy, `unknown op ${JSON.stringify(String(msg.op)).slice(0, 60)}`);
  }

  private refuse(conn: Conn, id: unknown, code: string, message: string): void {
    this.send(conn, JSON.stringify({ type: 'error', id: typeof id === 'string' ? id : null, code, message }));
  }

  private subscribe(conn: Conn, msg: Record<string, unknown>): void {
    const { id, topic, key, index, epoch, filter } = msg;
    if (typeof id !== 'string' || id === '' || id.length > 128) return this.refuse(conn, id, 'bad_request', 'id must be a non-empty string of at most 128 characters');
    if (conn.subs.has(id)) return this.refuse(conn, id, 'already_subscribed', `subscription "${id}" exists on this connection`);
    if (conn.subs.size >= this.o.subscriptionsMax) return this.refuse(conn, id, 'too_many_subscriptions', `at most ${this.o.subscriptionsMax} subscriptions per connection`);
    if (typeof key !== 'string') return this.refuse(conn, id, 'bad_key', 'key must be a string');
    if (index !== undefined && (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0)) return this.refuse(conn, id, 'bad_request', 'index must be a non-negative integer');
    if (filter !== undefined && (filter === null || typeof filter !== 'object')) return this.refuse(conn, id, 'bad_request', 'filter must be an object');
    const asked = filter as ViewFilter | undefined;
    const viewFilter: ViewFilter = { passingOnly: asked?.passingOnly === true, lockedOnly: asked?.lockedOnly === true };
    const made = makeView(String(topic), key, viewFilter, this.api);
    if ('error' in made) return this.refuse(conn, id, made.error, made.error === 'unknown_topic' ? `unknown topic ${JSON.stringify(topic)}` : `bad key ${JSON.stringify(key)} for topic ${String(topic)}`);
    if (conn.identity !== undefined && !mayWatch(conn.identity, String(topic), key)) {
      return this.refuse(conn, id, 'forbidden', `permission denied: read on ${String(topic)} ${JSON.stringify(key)}`);
    }
    const view = this.viewFor(`${String(topic)}\0${key}\0${viewFilter.passingOnly ? 1 : 0}${viewFilter.lockedOnly ? 1 : 0}`, made);
    const sub: Sub = { id, conn, view };
    // Snapshot or replay, then live, in one synchronous step: no change can fall in between.
    conn.subs.set(id, sub);
    view.subs.add(sub);
    this.start(sub, typeof index === 'number' ? index : 0, typeof epoch === 'string' ? epoch : undefined);
  }

  private start(sub: Sub, index: number, epoch: string | undefined): void {
    const current = this.api.runtime.state.index;
    if (index > 0) {
      const epochMatches = epoch === undefined || epoch === this.epoch;
      const changes = epochMatches && index <= current ? this.api.runtime.changes.since(index) : undefined;
      const replay = changes === undefined ? undefined : this.replay(sub, changes);
      if (replay !== undefined) return this.resume(sub, replay, current);
      const reason = !epochMatches || index > current ? 'epoch_changed' : changes === undefined ? 'index_too_old' : 'replay_too_large';
      this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
      this.send(sub.conn, JSON.stringify({ type: 'reset', id: sub.id, reason }));
      return this.snapshot(sub, current);
    }
    this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: false }));
    this.snapshot(sub, current);
  }

  /**
   * The newest state of everything that changed since a resume index, or undefined when it is larger
   * than a connection may queue (the client then gets a reset and a paged snapshot instead).
   */
  private replay(sub: Sub, changes: Change[]): Out[] | undefined {
    const seen = new Map<string, Out>();
    let chars = 0;
    for (const change of changes) {
      for (const c of sub.view.topic.candidates(change)) {
        if (seen.has(c.key)) continue;
        const value = c.value();
        seen.set(c.key, { op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
        chars += c.key.length + (value?.length ?? 0);
        if (chars > this.o.bufferedBytesHard / 2) return undefined;
      }
    }
    return [...seen.values()];
  }

  /** Everything the client missed, as one batch at the current index (newest state of each item). */
  private resume(sub: Sub, replay: Out[], current: number): void {
    this.send(sub.conn, JSON.stringify({ type: 'subscribed', id: sub.id, index: current, epoch: this.epoch, resumed: true }));
    if (replay.length > 0) this.deliver(sub, current, replay);
  }

  /**
   * Queues the snapshot: its pages are read from state as the socket takes them, so they may carry
   * items newer than `index`; every change after `index` follows as an event (held while the snapshot
   * is written), so the view is exact once those arrive, and a resume from `index` misses nothing.
   */
  private snapshot(sub: Sub, index: number): void {
    sub.conn.outbox.push({ job: { sub, cursor: sub.view.topic.cursor(), index } });
    this.pump(sub.conn);
  }

  private unsubscribe(conn: Conn, msg: Record<string, unknown>): void {
    const sub = typeof msg.id === 'string' ? conn.subs.get(msg.id) : undefined;
    if (sub === undefined) return this.refuse(conn, msg.id, 'unknown_subscription', `no subscription ${JSON.stringify(msg.id)} on this connection`);
    conn.subs.delete(sub.id);
    for (const [k, p] of conn.pending) {
      if (p.subId !== sub.id) continue;
      conn.pending.delete(k);
      conn.pendingBytes -= p.value?.length ?? 0;
    }
    // A snapshot not written yet is dropped (what was written of it already is the client's to discard).
    const left = conn.outbox.filter((t) => !('job' in t) || t.job.sub !== sub);
    conn.outbox.splice(0, conn.outbox.length, ...left);
    this.leave(sub);
    this.send(conn, JSON.stringify({ type: 'unsubscribed', id: sub.id }));
  }

  // ---------------------------------------------------------------- views and fan-out

  private viewFor(id: string, topic: TopicView): View {
    let view = this.views.get(id);
    if (view === undefined) {
      view = { id, topic, fingerprints: undefined, members: undefined, subs: new Set() };
      if (topic.tracking !== 'none') {
        // Read page by page: only the fingerprints (or keys) stay, not the items.
        const fingerprints = topic.tracking === 'fingerprints' ? new Map<string, string>() : undefined;
        const members = topic.tracking === 'members' ? new Set<string>() : undefined;
        const cursor = topic.cursor();
        for (let page = cursor.next(this.o.snapshotFrameBytes); ; page = cursor.next(this.o.snapshotFrameBytes)) {
          for (const [key, value] of page.items) {
            fingerprints?.set(key, fingerprint(value));
            members?.add(key);
          }
          if (page.done) break;
        }
        view.fingerprints = fingerprints;
        view.members = members;
      }
      this.views.set(id, view);
    }
    return view;
  }

  private leave(sub: Sub): void {
    sub.view.subs.delete(sub);
    if (sub.view.subs.size === 0) this.views.delete(sub.view.id);
  }

  /** Whether a candidate's current value is news for the view's subscribers (and remembers it). */
  private changed(view: View, key: string, value: string | undefined): boolean {
    if (view.fingerprints !== undefined) {
      const next = value === undefined ? undefined : fingerprint(value);
      if (next === view.fingerprints.get(key)) return false;
      if (next === undefined) view.fingerprints.delete(key);
      else view.fingerprints.set(key, next);
      return true;
    }
    if (view.members !== undefined) {
      if (value === undefined) return view.members.delete(key);
      view.members.add(key);
    }
    return true;
  }

  /** One applied entry: each view works out what changed for it once, then tells its subscribers. */
  private onChange(change: Change): void {
    for (const view of this.views.values()) {
      const out: Out[] = [];
      for (const c of view.topic.candidates(change)) {
        const value = c.value();
        if (!this.changed(view, c.key, value)) continue;
        out.push({ op: value === undefined ? 'delete' : 'upsert', key: c.key, value });
      }
      if (out.length === 0) continue;
      for (const sub of view.subs) this.deliver(sub, change.index, out);
    }
  }

  private deliver(sub: Sub, index: number, events: Out[]): void {
    const conn = sub.conn;
    if (conn.closed) return;
    if (conn.outbox.length > 0 || conn.pending.size > 0 || conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) {
      this.hold(conn, sub.id, index, events);
      return;
    }
    this.write(conn, render(sub.id, index, events));
  }

  /** A slow reader: keep only the newest state per item, within the hard limits. */
  private hold(conn: Conn, subId: string, index: number, events: Out[]): void {
    for (const e of events) {
      const slot = `${subId}\0${e.key}`;
      conn.pendingBytes -= conn.pending.get(slot)?.value?.length ?? 0;
      conn.pending.set(slot, { subId, key: e.key, value: e.value, index });
      conn.pendingBytes += e.value?.length ?? 0;
    }
    if (conn.pending.size > this.o.pendingItemsMax) this.end(conn, closeCodes.slowConsumer, 'slow consumer');
    else this.overBudget(conn);
  }

  /**
   * A connection's queued bytes: what uWS buffers for it beyond its snapshot pages in flight (those are
   * the agent's snapshot budget), its held events and its queued messages. Past the hard limit it is
   * closed with 4008; true then.
   */
  private overBudget(conn: Conn): boolean {
    if (conn.closed) return true;
    this.observe(conn);
    const queued = conn.ws.getBufferedAmount() - conn.snapshotInFlight + conn.pendingBytes + conn.outboxBytes;
    if (queued <= this.o.bufferedBytesHard) return false;
    this.end(conn, closeCodes.slowConsumer, 'slow consumer');
    return true;
  }

  /** Lowers a connection's snapshot bytes in flight to what uWS can still be holding of them. */
  private observe(conn: Conn): void {
    const buffered = conn.ws.getBufferedAmount();
    if (conn.snapshotInFlight <= buffered) return;
    this.snapshotInFlight -= conn.snapshotInFlight - buffered;
    conn.snapshotInFlight = buffered;
  }

  /** The socket drained: ordered messages and snapshot pages first, then the held events. */
  private drain(conn: Conn | undefined): void {
    if (conn === undefined || conn.closed) return;
    this.pump(conn);
    this.wakeWaiting();
  }

  /** Snapshots that waited for the agent's budget try again (budget freed by a drain or a close). */
  private wakeWaiting(): void {
    if (this.waiting.size === 0) return;
    for (const conn of this.conns) this.observe(conn);
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const conn of waiting) this.pump(conn);
  }

  /**
   * Writes what waits for the socket while it is below the soft limit: messages in order, snapshot pages
   * read as they go (while the agent's snapshot budget allows, or when this connection has none in
   * flight); once nothing waits, the held events as one batch per subscription.
   */
  private pump(conn: Conn): void {
    if (conn.closed) return;
    this.observe(conn);
    conn.ws.cork(() => {
      while (conn.outbox.length > 0 && !conn.closed && conn.ws.getBufferedAmount() <= this.o.bufferedBytesSoft) {
        const task = conn.outbox[0]!;
        if ('text' in task) {
          conn.outbox.shift();
          conn.outboxBytes -= task.text.length;
          this.write(conn, task.text);
          continue;
        }
        // A page the kernel took at once is no longer in flight here.
        this.observe(conn);
        if (this.snapshotInFlight >= this.o.snapshotBytesMax && conn.snapshotInFlight > 0) {
          this.waiting.add(conn);
          return;
        }
        this.page(conn, task.job);
      }
      if (conn.closed || conn.outbox.length > 0 || conn.pending.size === 0) return;
      if (conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) return;
      this.flushHeld(conn);
    });
  }

  /** One snapshot frame; the last one (`more: false`) is followed by `end_of_snapshot`. */
  private page(conn: Conn, job: SnapshotJob): void {
    const { items, done } = job.cursor.next(this.o.snapshotFrameBytes);
    const keys = items.map(([k]) => JSON.stringify(k)).join(',');
    const values = items.map(([, v]) => v).join(',');
    const text = `{"type":"snapshot","id":${JSON.stringify(job.sub.id)},"index":${job.index},"keys":[${keys}],"items":[${values}],"more":${!done}}`;
    conn.snapshotInFlight += text.length;
    this.snapshotInFlight += text.length;
    this.write(conn, text);
    if (!done) return;
    conn.outbox.shift();
    this.write(conn, JSON.stringify({ type: 'end_of_snapshot', id: job.sub.id, index: job.index }));
  }

  private flushHeld(conn: Conn): void {
    const bySub = new Map<string, { index: number; events: Out[] }>();
    for (const p of conn.pending.values()) {
      const group = bySub.get(p.subId) ?? { index: 0, events: [] };
      group.index = Math.max(group.index, p.index);
      group.events.push({ op: p.value === undefined ? 'delete' : 'upsert', key: p.key, value: p.value });
      bySub.set(p.subId, group);
    }
    conn.pending.clear();
    conn.pendingBytes = 0;
    for (const [subId, g] of bySub) this.write(conn, renderBatch(subId, g.index, g.events));
  }

  private bookmarks(): void {
    const now = Date.now();
    const index = this.api.runtime.state.index;
    for (const conn of this.conns) {
      if (conn.closed || conn.pending.size > 0 || conn.outbox.length > 0 || now - conn.lastSentMs < this.o.bookmarkIntervalMs) continue;
      this.send(conn, JSON.stringify({ type: 'bookmark', index }));
    }
  }

  /**
   * Sends a message that must keep its place (control messages): behind anything already waiting, and
   * queued while the socket is backed up, within the connection's budget.
   */
  private send(conn: Conn, text: string): void {
    if (conn.closed) return;
    if (conn.outbox.length > 0 || conn.ws.getBufferedAmount() > this.o.bufferedBytesSoft) {
      conn.outbox.push({ text });
      conn.outboxBytes += text.length;
      this.overBudget(conn);
      return;
    }
    this.write(conn, text);
  }

  /** Writes one message; a dropped one (2) would break the delta stream, so the connection is ended. */
  private write(conn: Conn, text: string): void {
    if (conn.closed) return;
    conn.lastSentMs = Date.now();
    if (conn.ws.send(text, false) === 2) this.end(conn, closeCodes.slowConsumer, 'slow consumer');
  }
}

/** What the stream's topics show, by the resource their rules name. */
const streamResources = ['service', 'node', 'session', 'key'] as const;

/**
 * Whether a token may open the stream: its rules must grant read on some name of a resource a topic
 * shows (a service, node, session or key prefix). A rule's own prefix is such a name when any is: the
 * longest rule matching a readable name is an allow rule whose prefix is itself readable.
 */
function mayOpen(identity: Identity): boolean {
  return identity.rules.some((r) => r.access !== 'deny' && (streamResources as readonly string[]).includes(r.resource)
    && allowed(identity, { resource: r.resource, name: r.prefix, access: 'read' }));
}

/** What tells an item's JSON from its next version: the text itself when short, else its length and digest. */
function fingerprint(text: string): string {
  return text.length <= 64 ? text : `#${text.length}:${createHash('sha1').update(text).digest('base64')}`;
}

/**
 * The read a subscription needs, as the matching HTTP query would: a service's health or checks need
 * read on the service (every service's health: read on all of them); a node's checks, or checks by state, read on nodes; a node's
 * sessions read on that node's sessions (every node's: read on all of them, as a prefix).
 * A KV prefix needs read on the prefix and on every rule below it, since the view shows every key.
 */
function mayWatch(identity: Identity, topic: string, key: string): boolean {
  const need = (resource: AccessRequest['resource'], name: string): AccessRequest => ({ resource, name, access: 'read' });
  switch (topic) {
    // Every service (the `""` subject of service_health): read on every service rule, as a prefix.
    case 'service_health': return key === '' ? allowedPrefix(identity, need('service', '')) : allowed(identity, need('service', key));
    case 'service_checks': case 'serving_status': return allowed(identity, need('service', key));
    case 'node_checks': return allowed(identity, need('node', key));
    case 'checks_in_state': return allowed(identity, need('node', ''));
    case 'sessions': return key === '' ? allowedPrefix(identity, need('session', '')) : allowed(identity, need('session', key));
    case 'kv_prefix': return allowedPrefix(identity, need('key', key));
    default: return false;
  }
}

function renderOne(e: Out): string {
  return e.op === 'delete'
    ? `{"op":"delete","key":${JSON.stringify(e.key)}}`
    : `{"op":"upsert","key":${JSON.stringify(e.key)},"value":${e.value}}`;
}

function renderBatch(subId: string, index: number, events: Out[]): string {
  return `{"type":"batch","id":${JSON.stringify(subId)},"index":${index},"events":[${events.map(renderOne).join(',')}]}`;
}

function render(subId: string, index: number, events: Out[]): string {
  if (events.length > 1) return renderBatch(subId, index, events);
  const e = events[0]!;
  const value = e.op === 'delete' ? '' : `,"value":${e.value}`;
  return `{"type":"event","id":${JSON.stringify(subId)},"index":${index},"op":"${e.op}","key":${JSON.stringify(e.key)}${value}}`;
}

function withHeaders(w: Wire, headers: [string, string][]): Wire {
  return { ...w, headers: [...w.headers, ...headers] };
}
